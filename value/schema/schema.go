// Package schema compiles JSON Schemas (draft 2020-12 unless a schema says
// otherwise) and validates JSON values against them, reporting every
// violation with the RFC 6901 JSON pointer of the offending part. At walks a
// schema document without validating, to ask whether it declares a path
// and what type it gives the value there. Flows, tools, the model decision
// primitive and the planner share it.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema (draft 2020-12 unless it says otherwise).
type Schema struct {
	// Name is the schema's name, file or "<step> output_schema".
	Name string
	// Doc is the schema document as JSON values.
	Doc      any
	raw      json.RawMessage
	compiled *jsonschema.Schema
}

var printer = message.NewPrinter(language.English)

// Compile compiles doc (JSON values, or json.RawMessage) under name.
func Compile(name string, doc any) (*Schema, error) {
	if raw, ok := doc.(json.RawMessage); ok {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("schema %s is not JSON: %w", name, err)
		}
		doc = v
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem:///" + strings.NewReplacer(" ", "_", "/", "_").Replace(name) + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema %s is not a valid JSON Schema: %s", name, trimSchemaErr(err))
	}
	return &Schema{Name: name, Doc: doc, raw: raw, compiled: sch}, nil
}

func trimSchemaErr(err error) string {
	s := err.Error()
	return strings.ReplaceAll(s, "mem:///", "")
}

// JSON returns the schema document as JSON.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// Violation is one way a value breaks a schema.
type Violation struct {
	// Pointer is the RFC 6901 JSON pointer to the offending part of the value.
	Pointer string
	Message string
}

// Error lists the ways a value breaks a schema.
type Error struct {
	Schema     string
	Violations []Violation
}

// Error reads like `breaks schema score_schema: at /score: got string, want number`.
func (e *Error) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		ptr := v.Pointer
		if ptr == "" {
			ptr = "(root)"
		}
		parts[i] = "at " + ptr + ": " + v.Message
	}
	return fmt.Sprintf("breaks schema %s: %s", e.Schema, strings.Join(parts, "; "))
}

// Validate checks v (JSON values) against the schema; the error is a
// *Error.
func (s *Schema) Validate(v any) error {
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Error{Schema: s.Name, Violations: []Violation{{Message: err.Error()}}}
	}
	out := &Error{Schema: s.Name}
	collectViolations(ve, &out.Violations)
	sort.SliceStable(out.Violations, func(i, j int) bool { return out.Violations[i].Pointer < out.Violations[j].Pointer })
	return out
}

func collectViolations(ve *jsonschema.ValidationError, out *[]Violation) {
	if len(ve.Causes) == 0 {
		*out = append(*out, Violation{Pointer: pointer(ve.InstanceLocation), Message: ve.ErrorKind.LocalizedString(printer)})
		return
	}
	for _, c := range ve.Causes {
		collectViolations(c, out)
	}
}

func pointer(loc []string) string {
	var b strings.Builder
	for _, t := range loc {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
