package flow

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/value/schema"
)

// argProblem is one way a call's args template cannot fit a tool's input
// schema; key is the top-level arg it is about ("" for the whole args).
type argProblem struct {
	key, msg string
}

// fitArgs checks an args template (the decoded YAML, every string a
// template) against tool's input schema in, as far as it can be known
// before a call: required fields present, no field the schema does not
// allow, constant values that fit their field's schema, and text with
// placeholders (always a string once rendered) only where the field may
// be a string. A placeholder standing alone keeps the type of what it
// reads, unknown here unless typeOf (which may be nil) knows it: a
// placeholder reading a field an upstream output schema declares has that
// field's types, and must fit the field's. Nothing is reported when in is
// empty or not an object schema.
func fitArgs(tool string, in json.RawMessage, args any, typeOf readTypes) []argProblem {
	if len(in) == 0 {
		return nil
	}
	var doc map[string]any
	if json.Unmarshal(in, &doc) != nil {
		return nil
	}
	fields, _ := args.(map[string]any)
	if fields == nil {
		if text, ok := args.(string); ok && single(text) {
			return nil // args: "{step}" hands a value on whole: its shape is the call's to check
		}
		if args != nil {
			return []argProblem{{msg: fmt.Sprintf("args must be a mapping of the fields of %s's input", tool)}}
		}
		fields = map[string]any{}
	}
	var probs []argProblem
	props, _ := doc["properties"].(map[string]any)
	if req, ok := doc["required"].([]any); ok {
		for _, r := range req {
			if k, ok := r.(string); ok {
				if _, has := fields[k]; !has {
					probs = append(probs, argProblem{msg: fmt.Sprintf("args lack %q, which tool %s requires", k, tool)})
				}
			}
		}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ps, known := props[k]
		if !known {
			if ap, ok := doc["additionalProperties"].(bool); ok && !ap {
				names := make([]string, 0, len(props))
				for n := range props {
					names = append(names, n)
				}
				probs = append(probs, argProblem{k, fmt.Sprintf("args have %q, which tool %s's input does not allow%s", k, tool, didYouMean(k, names))})
			}
			continue
		}
		if text, ok := fields[k].(string); ok && typeOf != nil && single(text) {
			want := types(ps)
			if got, from := typeOf(text); len(got) > 0 && len(want) > 0 && !fits(got, want) {
				probs = append(probs, argProblem{k, fmt.Sprintf("args %q reads %s, which %s declares as %s, and tool %s's input wants %s there", k, text, from, strings.Join(got, " or "), tool, strings.Join(want, " or "))})
			}
			continue
		}
		if text, ok := fields[k].(string); ok && isText(text) {
			if want := types(ps); len(want) > 0 && !slices.Contains(want, "string") {
				probs = append(probs, argProblem{k, fmt.Sprintf("args %q is text with placeholders, so always a string, and tool %s's input wants %s there (a placeholder alone, like \"{step.field}\", passes its value's own type)", k, tool, strings.Join(want, " or "))})
			}
			continue
		}
		if !isConstant(fields[k]) {
			continue
		}
		sch, err := schema.Compile(tool+" input "+k, ps)
		if err != nil {
			continue
		}
		if err := sch.Validate(fields[k]); err != nil {
			probs = append(probs, argProblem{k, fmt.Sprintf("args %q does not fit tool %s's input: %v", k, tool, err)})
		}
	}
	return probs
}

// readTypes returns the JSON types of what a placeholder alone (text)
// reads and what declares them ("step X's output_schema"), or nil when
// they are not known.
type readTypes func(text string) (types []string, from string)

// fits reports whether a value of one of the types got may be one of
// want (an integer is a number).
func fits(got, want []string) bool {
	for _, g := range got {
		if slices.Contains(want, g) || g == "integer" && slices.Contains(want, "number") {
			return true
		}
	}
	return false
}

// outputTypes is the readTypes of a flow being decoded: a placeholder
// whose root is a plain step (not for_each, not repeat) reads that step's
// output, typed by its output_schema, else by its tool's; the types are
// those the schema declares along the path, through properties and
// items, nil where it says nothing (a $ref, a combinator, no type:).
func (d *decoder) outputTypes(text string) ([]string, string) {
	t, err := template.Parse(text)
	if err != nil || !t.Single() {
		return nil, ""
	}
	path := t.Refs()[0].Path
	var from *Step
	for _, src := range d.srcs {
		if src.step.ID == path[0].Key {
			from = src.step
		}
	}
	if from == nil || from.ForEach != nil || from.Repeat != nil {
		return nil, ""
	}
	var raw json.RawMessage
	what := "step " + from.ID + "'s output_schema"
	switch {
	case from.OutputSchema != nil:
		raw = from.OutputSchema.JSON()
	case from.Type == Tool && from.Tool != "":
		if spec, ok := d.toolSpec(from.Tool); ok {
			raw, what = spec.OutputSchema, "tool "+from.Tool+"'s output_schema"
		}
	}
	var node any
	if len(raw) == 0 || json.Unmarshal(raw, &node) != nil {
		return nil, ""
	}
	for _, seg := range path[1:] {
		m, _ := node.(map[string]any)
		if seg.IsIndex {
			node = m["items"]
			continue
		}
		props, _ := m["properties"].(map[string]any)
		node = props[seg.Key]
	}
	return types(node), what
}

// isText reports whether s is a template with placeholders that is not one
// placeholder alone: it always renders to a string.
func isText(s string) bool {
	t, err := template.Parse(s)
	return err == nil && !t.IsLiteral() && !t.Single()
}

// single reports whether s is one placeholder alone, which renders to the
// value it reads, of a type unknown here.
func single(s string) bool {
	t, err := template.Parse(s)
	return err == nil && t.Single()
}

// types are the JSON types a property schema names in type:, if any.
func types(ps any) []string {
	m, _ := ps.(map[string]any)
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// checkToolArgs checks the args of every tool step, and of every fallback
// tool, against the tool's input schema (fitArgs), each problem located at
// the arg it is about (else at args:).
func (d *decoder) checkToolArgs() {
	for _, src := range d.srcs {
		s := src.step
		if s.Type == Tool && s.Tool != "" && s.Args != nil {
			if f, ok := src.fields["args"]; ok {
				d.fitStepArgs(s.ID, s.Tool, f.value, "args")
			}
		}
		if fb := s.Fallback; fb != nil && fb.Tool != "" && fb.Args != nil {
			if f, ok := src.fields["fallback"]; ok {
				d.fitStepArgs(s.ID, fb.Tool, nodeAt(f.value, "/args"), "fallback.args")
			}
		}
	}
}

// fitStepArgs reports what fitArgs finds in the args node n of step, a call
// of tool; what names the field (args, fallback.args).
func (d *decoder) fitStepArgs(step, tool string, n ast.Node, what string) {
	spec, ok := d.toolSpec(tool)
	if !ok {
		return // checkTargets reported the unknown tool
	}
	v, err := toValue(n)
	if err != nil {
		return // args reported it
	}
	for _, p := range fitArgs(tool, spec.InputSchema, v, d.outputTypes) {
		at := n
		if p.key != "" {
			at = nodeAt(n, "/"+escapeKey(p.key))
		}
		d.diags.add(posOf(at), step, "%s%s", what, strings.TrimPrefix(p.msg, "args"))
	}
}

// escapeKey escapes a mapping key as an RFC 6901 pointer token.
func escapeKey(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
