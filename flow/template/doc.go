// Package template compiles and renders the {path} placeholders of
// prompt_template and of the string leaves of a step's args.
//
// A template is text with placeholders such as {input_text} or
// { extract_info.name } (the path grammar is flow/ref's; spaces around it
// are allowed). {{ and }} stand for literal { and }. A template that is
// exactly one placeholder renders to the referenced value itself, keeping
// its JSON type; otherwise values are spliced into the text: strings raw,
// numbers and booleans as JSON writes them, null as "null", and objects and
// lists as compact JSON with sorted keys.
//
// Templates and Values are immutable after parsing and safe for concurrent
// use.
package template
