// Package value handles the JSON values that flow between steps: the Go
// shapes nil, bool, float64, string, []any and map[string]any. It normalises
// what Go tools return into that domain, encodes values as canonical JSON
// (sorted keys, no insignificant space, shortest float form) and digests them
// with sha256, without going through reflection for the common shapes.
package value
