package project

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/value"
)

// MaxInputBytes bounds a run's input read from a file or a stream
// (input.json, --input FILE, stdin): a larger one is refused before it is
// parsed.
const MaxInputBytes = 64 << 20

// ReadInputFile reads the input file at path (a run's input.json),
// refusing a folder and a file of more than MaxInputBytes.
func ReadInputFile(path string) ([]byte, error) {
	return yamlnode.ReadFile(path, MaxInputBytes)
}

// ParseInput parses data as a run's input: exactly one JSON value, a
// leading byte-order mark dropped. src says where data came from (a file,
// stdin, a flag) in the error, which locates a syntax error by line and
// column.
func ParseInput(data []byte, src string) (any, error) {
	data = yamlnode.TrimBOM(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("input %s is not JSON: %w", src, value.Locate(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("input %s holds more than one JSON value", src)
	}
	return v, nil
}
