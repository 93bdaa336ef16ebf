package flow

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// decodeVerifies reads a tool's verifies: the fields of its output that
// are a source of truth, each a JSON pointer or a top-level field's bare
// name (safety.ParseVerifies), returned as pointers with their positions.
func (d *decoder) decodeVerifies(f field, where string) ([]string, []Pos) {
	entries, pos, ok := d.strList(f, "")
	if !ok {
		return nil, nil
	}
	if len(entries) > safety.MaxVerifies {
		d.diags.add(posOf(f.value), "", "%s: verifies has %d entries, more than %d", where, len(entries), safety.MaxVerifies)
		return nil, nil
	}
	var out []string
	var at []Pos
	for i, e := range entries {
		ptr, _, err := safety.ParseVerifies(e)
		if err != nil {
			d.diags.add(pos[i], "", "%s: verifies: %v", where, err)
			continue
		}
		if slices.Contains(out, ptr) {
			d.diags.add(pos[i], "", "%s: verifies names %s twice", where, ptr)
			continue
		}
		out, at = append(out, ptr), append(at, pos[i])
	}
	return out, at
}

// checkVerifies returns what is wrong with the verifies: of spec: an entry
// that does not parse (a Go tool's), or one naming a field its output
// schema does not have; one problem per entry, with its index.
func checkVerifies(spec *tool.Spec) []verifiesProblem {
	var out []verifiesProblem
	for i, e := range spec.Verifies {
		ptr, toks, err := safety.ParseVerifies(e)
		if err != nil {
			out = append(out, verifiesProblem{i, err.Error()})
			continue
		}
		if msg := outputFieldProblem(spec.OutputSchema, toks); msg != "" {
			out = append(out, verifiesProblem{i, fmt.Sprintf("%s names no field of the tool's output: %s", ptr, msg)})
		}
	}
	return out
}

type verifiesProblem struct {
	index int
	msg   string
}

// outputFieldProblem says why tokens name no field of a value of the JSON
// Schema raw, or "" when they do or the schema cannot tell (none, a $ref,
// a combination, an object open to any field).
func outputFieldProblem(raw json.RawMessage, tokens []string) string {
	var s any
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	at := ""
	for _, tok := range tokens {
		m, ok := s.(map[string]any)
		if !ok || opaque(m) {
			return ""
		}
		props, _ := m["properties"].(map[string]any)
		items, hasItems := m["items"]
		switch {
		case hasItems && (tok == safety.Wildcard || isIndex(tok)):
			s = items
		case hasItems && props == nil:
			return fmt.Sprintf("%s is a list: name its items with * (or an index), like %s/*", orRoot(at), at)
		case props != nil && props[tok] != nil:
			s = props[tok]
		case props != nil && tok != safety.Wildcard:
			if extra, ok := m["additionalProperties"].(map[string]any); ok {
				s = extra
				break
			}
			names := make([]string, 0, len(props))
			for k := range props {
				names = append(names, k)
			}
			slices.Sort(names)
			return fmt.Sprintf("the output schema has no field %q at %s%s; its fields there: %s", tok, orRoot(at), didYouMean(tok, names), strings.Join(names, ", "))
		case scalarType(m):
			return fmt.Sprintf("%s is a %v, which has no fields", orRoot(at), m["type"])
		default:
			return ""
		}
		at += "/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
	}
	return ""
}

// opaque reports whether schema m says too little to check a field name:
// a reference, a combination or pattern properties.
func opaque(m map[string]any) bool {
	for _, k := range []string{"$ref", "allOf", "anyOf", "oneOf", "patternProperties", "if", "$dynamicRef"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func scalarType(m map[string]any) bool {
	switch m["type"] {
	case "string", "number", "integer", "boolean", "null":
		return true
	}
	return false
}

func isIndex(tok string) bool {
	n, err := strconv.Atoi(tok)
	return err == nil && n >= 0 && strconv.Itoa(n) == tok
}

func orRoot(at string) string {
	if at == "" {
		return "the output"
	}
	return at
}
