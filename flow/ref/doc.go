// Package ref parses and resolves reference paths such as
// extract_info.name, steps.send-email.status or items[0].title.
//
// A path is an identifier followed by any number of ".key" field accesses
// and "[n]" list indexes. Identifiers and keys match
// [A-Za-z_][A-Za-z0-9_-]*; hyphens are allowed inside them so that step ids
// like send-email can be named (the expression package, where a hyphen is
// minus, rejects them itself).
//
// Resolve walks a path through decoded JSON values (map[string]any, []any
// and scalars) and reports a *MissingError that names the failing segment
// and what was available instead.
package ref
