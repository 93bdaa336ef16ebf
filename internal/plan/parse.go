package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/reinhq/rein/safety"
)

// ParseError is a plan document Parse rejected: every problem found, each
// with the JSON pointer of the offending part. A syntax error, a document
// over MaxBytes or nesting deeper than MaxDepth stops parsing at once;
// unknown fields, duplicate keys and wrong types are all collected.
type ParseError struct {
	Problems []Problem
}

// Error reads like `plan rejected: at /steps/0: unknown field "why" (known: id, tool, depends_on, args, declaration)`.
func (e *ParseError) Error() string { return "plan rejected: " + joinProblems(e.Problems) }

// fatal stops parsing.
type fatal struct{ p Problem }

func (f *fatal) Error() string { return f.p.String() }

// Parse reads a plan document strictly: exactly one JSON object of the form
// {"goal": "…", "steps": [{"id", "tool", "depends_on", "args",
// "declaration"}]} (a declaration as safety.ParseDeclaration reads it), at most
// MaxBytes long and MaxDepth deep, with no unknown fields, no duplicate keys
// and the right type everywhere (null counts as absent for goal,
// depends_on and args). Errors are a *ParseError. Parse checks the shape
// only; Validate checks the plan against the tools.
func Parse(data []byte) (*Plan, error) {
	if len(data) > MaxBytes {
		return nil, &ParseError{Problems: []Problem{{Message: fmt.Sprintf("plan is %d bytes, more than the %d bytes a plan may be", len(data), MaxBytes)}}}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &ParseError{Problems: []Problem{{Message: `plan is empty: expected a JSON object {"goal": …, "steps": […]}`}}}
	}
	ps := &parser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p, err := ps.plan()
	if err != nil {
		var f *fatal
		if errors.As(err, &f) {
			return nil, &ParseError{Problems: append(ps.probs, f.p)}
		}
		return nil, &ParseError{Problems: append(ps.probs, Problem{Message: err.Error()})}
	}
	if _, err := ps.dec.Token(); err != io.EOF {
		off := int(ps.dec.InputOffset())
		ps.problem("", "extra data after the plan at byte offset %d: %s; send one JSON value only", off, fragment(data, off))
	}
	if len(ps.probs) > 0 {
		return nil, &ParseError{Problems: ps.probs}
	}
	return p, nil
}

type parser struct {
	data  []byte
	dec   *json.Decoder
	probs []Problem
}

func (ps *parser) problem(ptr, format string, args ...any) {
	ps.probs = append(ps.probs, Problem{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
}

func (ps *parser) token(ptr string) (json.Token, error) {
	t, err := ps.dec.Token()
	if err == nil {
		return t, nil
	}
	var se *json.SyntaxError
	var msg string
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		msg = "the JSON ends early (truncated?): the value here is not closed"
		if ptr == "" {
			msg = "the JSON ends early (truncated?): the plan object is not closed"
		}
	case errors.As(err, &se):
		off := int(se.Offset)
		if off > 0 {
			off-- // the offset is just past the offending byte
		}
		msg = fmt.Sprintf("not valid JSON: %s at byte offset %d: %s", se.Error(), off, fragment(ps.data, off))
	default:
		msg = "not valid JSON: " + err.Error()
	}
	return nil, &fatal{Problem{Pointer: ptr, Message: msg}}
}

func (ps *parser) plan() (*Plan, error) {
	t, err := ps.token("")
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		if d, ok := t.(json.Delim); ok && d == '[' {
			return nil, &fatal{Problem{Message: `a plan is a JSON object {"goal": …, "steps": […]}, got a list (wrap the steps in {"steps": …})`}}
		}
		return nil, &fatal{Problem{Message: `a plan is a JSON object {"goal": …, "steps": […]}, got ` + tokenType(t)}}
	}
	p := &Plan{}
	err = ps.object("", 1, func(key, ptr string) error {
		switch key {
		case "goal":
			s, err := ps.stringField(ptr, 2, true)
			p.Goal = s
			return err
		case "steps":
			return ps.steps(p, ptr)
		}
		ps.problem(ptr, "unknown field %q (known: goal, steps)", key)
		return ps.skip(ptr, 2)
	})
	return p, err
}

func (ps *parser) steps(p *Plan, ptr string) error {
	t, err := ps.token(ptr)
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if t != json.Delim('[') {
		ps.problem(ptr, "steps must be a list of step objects, got %s", tokenType(t))
		_, err := ps.valueFrom(t, ptr, 2)
		return err
	}
	p.Steps = []Step{}
	for i := 0; ps.dec.More(); i++ {
		sptr := ptr + "/" + strconv.Itoa(i)
		t, err := ps.token(sptr)
		if err != nil {
			return err
		}
		if t != json.Delim('{') {
			ps.problem(sptr, `a step must be an object {"id": …, "tool": …, "depends_on": […], "args": {…}}, got %s`, tokenType(t))
			if _, err := ps.valueFrom(t, sptr, 3); err != nil {
				return err
			}
			p.Steps = append(p.Steps, Step{})
			continue
		}
		var s Step
		if err := ps.step(&s, sptr); err != nil {
			return err
		}
		p.Steps = append(p.Steps, s)
	}
	_, err = ps.token(ptr)
	return err
}

func (ps *parser) step(s *Step, sptr string) error {
	return ps.object(sptr, 3, func(key, ptr string) error {
		var err error
		switch key {
		case "id":
			s.ID, err = ps.stringField(ptr, 4, false)
		case "tool":
			s.Tool, err = ps.stringField(ptr, 4, false)
		case "depends_on":
			s.DependsOn, err = ps.stringList(ptr)
		case "args":
			s.Args, err = ps.args(ptr)
		case "declaration":
			s.Declaration, err = ps.declaration(ptr)
		default:
			ps.problem(ptr, "unknown field %q in a step (known: id, tool, depends_on, args, declaration)", key)
			err = ps.skip(ptr, 4)
		}
		return err
	})
}

// object reads the members of an object whose '{' was just read, at
// nesting level, calling field for each first occurrence of a key.
func (ps *parser) object(ptr string, level int, field func(key, ptr string) error) error {
	if level > MaxDepth {
		return ps.tooDeep(ptr)
	}
	var seen map[string]struct{}
	for ps.dec.More() {
		t, err := ps.token(ptr)
		if err != nil {
			return err
		}
		key, _ := t.(string)
		kptr := ptr + "/" + pointerToken(key)
		if _, dup := seen[key]; dup {
			ps.problem(kptr, "duplicate key %q: give each key once", key)
			if err := ps.skip(kptr, level+1); err != nil {
				return err
			}
			continue
		}
		if seen == nil {
			seen = make(map[string]struct{}, 4)
		}
		seen[key] = struct{}{}
		if err := field(key, kptr); err != nil {
			return err
		}
	}
	_, err := ps.token(ptr)
	return err
}

func (ps *parser) tooDeep(ptr string) error {
	return &fatal{Problem{Pointer: ptr, Message: fmt.Sprintf("nested deeper than %d levels of objects and lists", MaxDepth)}}
}

func (ps *parser) stringField(ptr string, level int, nullOK bool) (string, error) {
	t, err := ps.token(ptr)
	if err != nil {
		return "", err
	}
	if s, ok := t.(string); ok {
		return s, nil
	}
	if t == nil && nullOK {
		return "", nil
	}
	ps.problem(ptr, "must be a string, got %s", tokenType(t))
	_, err = ps.valueFrom(t, ptr, level)
	return "", err
}

func (ps *parser) stringList(ptr string) ([]string, error) {
	t, err := ps.token(ptr)
	if err != nil || t == nil {
		return nil, err
	}
	if t != json.Delim('[') {
		ps.problem(ptr, "depends_on must be a list of step ids, got %s", tokenType(t))
		_, err := ps.valueFrom(t, ptr, 4)
		return nil, err
	}
	out := []string{}
	for i := 0; ps.dec.More(); i++ {
		eptr := ptr + "/" + strconv.Itoa(i)
		t, err := ps.token(eptr)
		if err != nil {
			return nil, err
		}
		if s, ok := t.(string); ok {
			out = append(out, s)
			continue
		}
		ps.problem(eptr, "a step id must be a string, got %s", tokenType(t))
		if _, err := ps.valueFrom(t, eptr, 5); err != nil {
			return nil, err
		}
	}
	_, err = ps.token(ptr)
	return out, err
}

func (ps *parser) args(ptr string) (map[string]any, error) {
	t, err := ps.token(ptr)
	if err != nil || t == nil {
		return nil, err
	}
	v, err := ps.valueFrom(t, ptr, 4)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		ps.problem(ptr, "args must be an object of argument names to values, got %s", tokenType(t))
	}
	return m, nil
}

// declaration reads a step's declaration (null counts as absent).
func (ps *parser) declaration(ptr string) (*safety.Declaration, error) {
	t, err := ps.token(ptr)
	if err != nil || t == nil {
		return nil, err
	}
	v, err := ps.valueFrom(t, ptr, 4)
	if err != nil {
		return nil, err
	}
	d, probs := safety.ParseDeclaration(v)
	for _, p := range probs {
		p.Pointer = ptr + p.Pointer
		ps.probs = append(ps.probs, p)
	}
	return d, nil
}

// skip reads and drops one value.
func (ps *parser) skip(ptr string, level int) error {
	t, err := ps.token(ptr)
	if err != nil {
		return err
	}
	_, err = ps.valueFrom(t, ptr, level)
	return err
}

// valueFrom reads the JSON value that starts with token t; a container
// opened here is at nesting level.
func (ps *parser) valueFrom(t json.Token, ptr string, level int) (any, error) {
	d, ok := t.(json.Delim)
	if !ok {
		return t, nil
	}
	if level > MaxDepth {
		return nil, ps.tooDeep(ptr)
	}
	if d == '{' {
		m := map[string]any{}
		err := ps.object(ptr, level, func(key, kptr string) error {
			v, err := ps.value(kptr, level+1)
			m[key] = v
			return err
		})
		return m, err
	}
	l := []any{}
	for i := 0; ps.dec.More(); i++ {
		v, err := ps.value(ptr+"/"+strconv.Itoa(i), level+1)
		if err != nil {
			return nil, err
		}
		l = append(l, v)
	}
	_, err := ps.token(ptr)
	return l, err
}

func (ps *parser) value(ptr string, level int) (any, error) {
	t, err := ps.token(ptr)
	if err != nil {
		return nil, err
	}
	return ps.valueFrom(t, ptr, level)
}

func tokenType(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		if v == '[' {
			return "a list"
		}
		return "an object"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", t)
}

// fragment quotes up to 40 bytes of data from off.
func fragment(data []byte, off int) string {
	if off < 0 {
		off = 0
	}
	if off > len(data) {
		off = len(data)
	}
	s := data[off:]
	if len(s) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(string(s[:cut])+"…") + ""
	}
	return strconv.Quote(string(s))
}
