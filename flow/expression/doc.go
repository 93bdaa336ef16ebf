// Package expression compiles and evaluates the expressions of a flow:
// when, gate, repeat.until and for_each. It wraps github.com/expr-lang/expr
// with a deterministic, side-effect-free subset of the language.
//
// References may be written bare (score_candidate.score > 60) or in braces
// ({score_candidate.score} > 60), which mean the same; braces that hold
// anything other than a hyphen-free flow/ref path (map literals such as
// {"a": 1}, predicate bodies such as {# > 1}) are left to expr.
//
// Only a fixed whitelist of pure builtins may be called (see Allowed); time,
// randomness and environment access are impossible, and a call to any other
// name is rejected at compile time. Identifiers are resolved at run time
// from the env map: a missing name is nil, so x == nil works. Reading a
// field of nil is a run-time error, as in expr; use ?. (x?.y) for a
// nil-safe read. Reading a missing key of an object yields nil.
//
// Programs are immutable and safe for concurrent use.
package expression
