package flow

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/reinhq/rein/internal/yamlnode"
)

// This file turns goccy/go-yaml AST nodes into values while keeping their
// positions, so every problem can be reported as file:line:col.

// maxValueDepth bounds the nesting of values in a flow file.
const maxValueDepth = 64

func posOf(n ast.Node) Pos {
	line, col := yamlnode.Start(n)
	return Pos{Line: line, Col: col}
}

// quoteOffset is 1 for quoted scalars: offsets inside the value start one
// column after the token.
func quoteOffset(n ast.Node) int {
	if tk := n.GetToken(); tk != nil {
		switch tk.Type {
		case token.DoubleQuoteType, token.SingleQuoteType:
			return 1
		}
	}
	return 0
}

// posAt returns the position of byte offset off inside scalar n's value, as
// far as it can be told (single-line scalars are exact).
func posAt(n ast.Node, off int) Pos {
	p := posOf(n)
	if _, ok := n.(*ast.LiteralNode); ok {
		return p
	}
	p.Col += quoteOffset(n) + off
	return p
}

type field struct {
	key    string
	keyPos Pos
	value  ast.Node
}

// fieldsOf returns the entries of a mapping node, or ok=false if n is not one.
func fieldsOf(n ast.Node) ([]field, bool) {
	values, ok := yamlnode.Entries(n)
	if !ok {
		return nil, false
	}
	out := make([]field, 0, len(values))
	for _, mv := range values {
		out = append(out, field{key: keyString(mv.Key), keyPos: posOf(mv.Key), value: mv.Value})
	}
	return out, true
}

func keyString(k ast.MapKeyNode) string {
	if s, ok := k.(ast.ScalarNode); ok {
		if v := s.GetValue(); v != nil {
			if str, ok := v.(string); ok {
				return str
			}
			return fmt.Sprint(v)
		}
	}
	return strings.TrimSpace(k.String())
}

func isNull(n ast.Node) bool {
	if n == nil {
		return true
	}
	_, ok := n.(*ast.NullNode)
	return ok
}

// toValue converts n into a JSON-domain value. Anchors, aliases, merge keys,
// tags and non-finite numbers are rejected: a flow is plain data.
func toValue(n ast.Node) (any, error) { return toValueDepth(n, 0) }

func toValueDepth(n ast.Node, depth int) (any, error) {
	if depth > maxValueDepth {
		return nil, locErr(n, "value nested deeper than %d levels", maxValueDepth)
	}
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, nil
	case *ast.StringNode:
		return v.Value, nil
	case *ast.LiteralNode:
		return v.Value.Value, nil
	case *ast.BoolNode:
		return v.Value, nil
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return float64(x), nil
		case uint64:
			return float64(x), nil
		}
		f, err := strconv.ParseFloat(v.GetToken().Value, 64)
		if err != nil {
			return nil, locErr(n, "number %s does not fit", v.GetToken().Value)
		}
		return f, nil
	case *ast.FloatNode:
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			return nil, locErr(n, "numbers must be finite")
		}
		return v.Value, nil
	case *ast.MappingNode, *ast.MappingValueNode:
		fields, _ := fieldsOf(n)
		out := make(map[string]any, len(fields))
		for _, f := range fields {
			if _, dup := out[f.key]; dup {
				return nil, &posError{pos: f.keyPos, msg: fmt.Sprintf("duplicate key %q", f.key)}
			}
			if _, merge := f.value.(*ast.MergeKeyNode); merge || f.key == "<<" {
				return nil, &posError{pos: f.keyPos, msg: "merge keys (<<) are not supported in flow files"}
			}
			x, err := toValueDepth(f.value, depth+1)
			if err != nil {
				return nil, err
			}
			out[f.key] = x
		}
		return out, nil
	case *ast.SequenceNode:
		out := make([]any, 0, len(v.Values))
		for _, e := range v.Values {
			x, err := toValueDepth(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case *ast.AnchorNode, *ast.AliasNode:
		return nil, locErr(n, "YAML anchors and aliases are not supported in flow files: write the value out")
	case *ast.TagNode:
		return nil, locErr(n, "YAML tags (%s) are not supported in flow files", v.Start.Value)
	case *ast.InfinityNode, *ast.NanNode:
		return nil, locErr(n, "numbers must be finite")
	}
	return nil, locErr(n, "unsupported YAML node %s", n.Type())
}

type posError struct {
	pos Pos
	msg string
}

func (e *posError) Error() string { return e.msg }

func locErr(n ast.Node, format string, args ...any) error {
	return &posError{pos: posOf(n), msg: fmt.Sprintf(format, args...)}
}

// scalar readers: each reports a located diagnostic and returns ok=false on
// a wrong type.

func (d *decoder) str(f field, step string) (string, bool) {
	switch v := f.value.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		// ids like `1` or `true` are written without quotes; keep their text.
		return v.GetToken().Value, true
	}
	d.diags.add(posOf(f.value), step, "%s must be a string, not %s", f.key, yamlnode.Kind(f.value))
	return "", false
}

// name is str for a field that names something (the flow's name, id and
// version): a NUL, a control character or text that is not UTF-8 (which
// YAML escapes can write) is reported at the value.
func (d *decoder) name(f field, step string) string {
	s, ok := d.str(f, step)
	if !ok {
		return ""
	}
	if msg := yamlnode.NameProblem(s); msg != "" {
		d.diags.add(posOf(f.value), step, "%s %q %s: names are printed and used as keys; write plain text", f.key, s, msg)
	}
	return s
}

func (d *decoder) integer(f field, step string) (int, bool) {
	if n, ok := d.integerQuiet(f); ok {
		return n, true
	}
	if _, ok := f.value.(*ast.IntegerNode); ok {
		d.diags.add(posOf(f.value), step, "%s is out of range", f.key)
		return 0, false
	}
	d.diags.add(posOf(f.value), step, "%s must be an integer, not %s", f.key, yamlnode.Kind(f.value))
	return 0, false
}

func (d *decoder) boolean(f field, step string) (bool, bool) {
	if v, ok := f.value.(*ast.BoolNode); ok {
		return v.Value, true
	}
	d.diags.add(posOf(f.value), step, "%s must be true or false, not %s", f.key, yamlnode.Kind(f.value))
	return false, false
}

func (d *decoder) number(f field, step string) (float64, bool) {
	switch v := f.value.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		x, err := toValue(v)
		if err == nil {
			return x.(float64), true
		}
	}
	d.diags.add(posOf(f.value), step, "%s must be a number, not %s", f.key, yamlnode.Kind(f.value))
	return 0, false
}

// duration reads a number of seconds or a Go duration string ("30s", "1m30s").
func (d *decoder) duration(f field, step string) (time.Duration, bool) {
	switch v := f.value.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		x, err := toValue(v)
		if err != nil {
			break
		}
		secs := x.(float64)
		// Both signs: converting an out-of-range float to an integer is
		// implementation-defined in Go.
		if math.Abs(secs) > float64(math.MaxInt64/int64(time.Second)) {
			d.diags.add(posOf(f.value), step, "%s is out of range", f.key)
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	case *ast.StringNode:
		dur, err := ParseDuration(v.Value)
		if err != nil {
			d.diags.add(posOf(f.value), step, "%s: %q is not a duration: write seconds (30) or a duration string (\"30s\", \"1m30s\", \"30d\")", f.key, v.Value)
			return 0, false
		}
		return dur, true
	}
	d.diags.add(posOf(f.value), step, "%s must be seconds (30) or a duration string (\"30s\"), not %s", f.key, yamlnode.Kind(f.value))
	return 0, false
}

// strList reads a list of strings; each entry keeps its position.
func (d *decoder) strList(f field, step string) ([]string, []Pos, bool) {
	seq, ok := f.value.(*ast.SequenceNode)
	if !ok {
		if isNull(f.value) {
			return []string{}, nil, true
		}
		what := "strings"
		if f.key == "requires" {
			what = "step ids"
		}
		d.diags.add(posOf(f.value), step, "%s must be a list of %s, not %s", f.key, what, yamlnode.Kind(f.value))
		return nil, nil, false
	}
	out := make([]string, 0, len(seq.Values))
	pos := make([]Pos, 0, len(seq.Values))
	good := true
	for _, e := range seq.Values {
		s, ok := d.str(field{key: f.key + " entry", value: e}, step)
		if !ok {
			good = false
			continue
		}
		out = append(out, s)
		pos = append(pos, posOf(e))
	}
	return out, pos, good
}

// unknownField reports a key that is not part of the format.
func (d *decoder) unknownField(f field, step, where string, known []string) {
	d.diags.add(f.keyPos, step, "unknown field %q in %s%s", f.key, where, didYouMean(f.key, known))
}

// integerQuiet reads an integer without reporting problems (they were
// reported where the field was first read).
func (d *decoder) integerQuiet(f field) (int, bool) {
	v, ok := f.value.(*ast.IntegerNode)
	if !ok {
		return 0, false
	}
	switch x := v.Value.(type) {
	case int64:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return int(x), true
		}
	case uint64:
		if x <= math.MaxInt32 {
			return int(x), true
		}
	}
	return 0, false
}
