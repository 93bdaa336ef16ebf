package casegen

import (
	"encoding/json"
	"math"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds of generation.
const (
	// MaxDepth bounds how deep nested objects get cases of their own
	// fields, and how deep a minimal value is built.
	MaxDepth = 4
	// MaxLength bounds the strings and lists made to reach a length bound
	// (a maxLength: 1000000 is reached, if at all, by no case).
	MaxLength = 4096
	// maxRefs bounds how many local $refs one lookup follows.
	maxRefs = 16
	// maxPattern bounds the pattern text the generator reads.
	maxPattern = 1024
)

// node is one schema object, with the document it belongs to (for $ref).
type node struct {
	root any
	m    map[string]any
}

// at resolves doc (a schema value in root) to a node: it follows local
// $refs ("#/$defs/x", "#/definitions/x", "#") and merges the first level of
// allOf; a boolean schema or one it cannot follow is an empty node.
func at(root, doc any) node {
	for range maxRefs {
		m, ok := doc.(map[string]any)
		if !ok {
			return node{root: root}
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return node{root: root, m: mergeAllOf(root, m)}
		}
		target, found := localRef(root, ref)
		if !found {
			return node{root: root, m: m}
		}
		doc = target
	}
	return node{root: root}
}

// mergeAllOf returns m with the properties, required and type of its allOf
// members (one level, $refs followed) folded in: enough for the common
// "allOf: [{$ref: base}, {required: [...]}]".
func mergeAllOf(root any, m map[string]any) map[string]any {
	all, ok := m["allOf"].([]any)
	if !ok || len(all) == 0 {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "allOf" {
			out[k] = v
		}
	}
	props := map[string]any{}
	if p, ok := out["properties"].(map[string]any); ok {
		for k, v := range p {
			props[k] = v
		}
	}
	req := stringsOf(out["required"])
	for _, a := range all {
		sub := at(root, a).m
		if sub == nil {
			continue
		}
		if p, ok := sub["properties"].(map[string]any); ok {
			for k, v := range p {
				if _, taken := props[k]; !taken {
					props[k] = v
				}
			}
		}
		for _, r := range stringsOf(sub["required"]) {
			if !slices.Contains(req, r) {
				req = append(req, r)
			}
		}
		if _, has := out["type"]; !has && sub["type"] != nil {
			out["type"] = sub["type"]
		}
		if _, has := out["additionalProperties"]; !has && sub["additionalProperties"] != nil {
			out["additionalProperties"] = sub["additionalProperties"]
		}
	}
	if len(props) > 0 {
		out["properties"] = props
	}
	if len(req) > 0 {
		r := make([]any, len(req))
		for i, s := range req {
			r[i] = s
		}
		out["required"] = r
	}
	return out
}

// localRef resolves a same-document JSON pointer reference.
func localRef(root any, ref string) (any, bool) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	cur := root
	if ptr == "" {
		return cur, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// types lists the JSON types the node names (type: as a string or a
// list), in the order given; none when it names none.
func (n node) types() []string {
	switch t := n.m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		return stringsOf(t)
	}
	return nil
}

// kind is the type the generator makes values of: the first named type
// (null last), else object when properties are listed, else "".
func (n node) kind() string {
	ts := n.types()
	for _, t := range ts {
		if t != "null" {
			return t
		}
	}
	if len(ts) > 0 {
		return "null"
	}
	if _, ok := n.m["properties"]; ok {
		return "object"
	}
	if _, ok := n.m["required"]; ok {
		return "object"
	}
	return ""
}

func (n node) props() map[string]any {
	p, _ := n.m["properties"].(map[string]any)
	return p
}

func (n node) required() []string { return stringsOf(n.m["required"]) }

func (n node) number(key string) (float64, bool) { return num(n.m[key]) }

// count reads a non-negative whole-number keyword (minLength, maxItems).
func (n node) count(key string) (int, bool) {
	f, ok := num(n.m[key])
	if !ok || f < 0 || f != math.Trunc(f) {
		return 0, false
	}
	if f > math.MaxInt32 {
		return math.MaxInt32, true
	}
	return int(f), true
}

func (n node) child(key string) node {
	v, ok := n.m[key]
	if !ok {
		return node{root: n.root}
	}
	return at(n.root, v)
}

// num reads a JSON number in any of the forms a decoded document holds.
func num(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint64:
		f = float64(x)
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func stringsOf(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// minimal makes the smallest plain value n accepts, as far as the
// generator can tell: const, then enum's first member, then default, then
// examples' first, then a value of its kind; base first of all: base, when not nil, is a
// value known to be valid (the flow folder's input.json): an object field
// takes base's value when base has one.
func minimal(n node, base any, depth int) any {
	if base != nil {
		if _, isObj := base.(map[string]any); !isObj || n.kind() != "object" {
			return base
		}
	}
	if c, ok := n.m["const"]; ok {
		return c
	}
	if e, ok := n.m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if d, ok := n.m["default"]; ok {
		return d
	}
	if ex, ok := n.m["examples"].([]any); ok && len(ex) > 0 {
		return ex[0]
	}
	switch n.kind() {
	case "object":
		out := map[string]any{}
		if depth >= MaxDepth {
			return out
		}
		bm, _ := base.(map[string]any)
		props := n.props()
		for _, name := range n.required() {
			out[name] = minimal(at(n.root, props[name]), bm[name], depth+1)
		}
		return out
	case "array":
		k, _ := n.count("minItems")
		k = min(k, MaxLength)
		out := make([]any, k)
		item := n.child("items")
		for i := range out {
			out[i] = minimal(item, nil, depth+1)
		}
		return out
	case "string":
		return stringOfLength(n, -1)
	case "integer":
		return minimalNumber(n, true)
	case "number":
		return minimalNumber(n, false)
	case "boolean":
		return false
	case "null":
		return nil
	}
	return "x"
}

// minimalNumber is 1 when the bounds allow it, else the smallest value they
// allow.
func minimalNumber(n node, integer bool) float64 {
	lo, hasLo := n.number("minimum")
	if ex, ok := n.number("exclusiveMinimum"); ok && (!hasLo || ex >= lo) {
		lo, hasLo = above(ex, integer), true
	}
	hi, hasHi := n.number("maximum")
	if ex, ok := n.number("exclusiveMaximum"); ok && (!hasHi || ex <= hi) {
		hi, hasHi = below(ex, integer), true
	}
	v := 1.0
	if hasLo && v < lo {
		v = lo
	}
	if hasHi && v > hi {
		v = hi
	}
	if integer {
		v = math.Ceil(v)
	}
	return v
}

// above is the value just inside an exclusive lower bound: the next whole
// number for an integer, else one hundredth more.
func above(ex float64, integer bool) float64 {
	if integer {
		return math.Floor(ex) + 1
	}
	return ex + 0.01
}

func below(ex float64, integer bool) float64 {
	if integer {
		return math.Ceil(ex) - 1
	}
	return ex - 0.01
}

// stringOfLength makes a string n accepts as far as the generator can
// tell, of length runes (-1: the shortest the bounds allow, at least 1):
// from the pattern when there is one, a format's sample, else x's.
func stringOfLength(n node, length int) string {
	lo, _ := n.count("minLength")
	hi, hasHi := n.count("maxLength")
	seed := "x"
	if p, ok := n.m["pattern"].(string); ok {
		if s, ok := fromPattern(p); ok {
			seed = s
		}
	} else if f, ok := n.m["format"].(string); ok && formats[f] != "" {
		seed = formats[f]
	}
	if length < 0 {
		length = max(lo, min(utf8.RuneCountInString(seed), MaxLength))
		if hasHi {
			length = min(length, hi)
		}
	}
	length = min(length, MaxLength)
	return fit(seed, length)
}

// fit cuts s to length runes, or pads it with its last rune.
func fit(s string, length int) string {
	r := []rune(s)
	if len(r) == 0 {
		r = []rune{'x'}
	}
	if len(r) >= length {
		return string(r[:length])
	}
	last := r[len(r)-1]
	return string(r) + strings.Repeat(string(last), length-len(r))
}

// formats are sample values of the string formats a schema commonly names.
var formats = map[string]string{
	"date":      "2026-01-02",
	"date-time": "2026-01-02T03:04:05Z",
	"time":      "03:04:05Z",
	"email":     "test@example.com",
	"uri":       "https://example.com/",
	"uuid":      "00000000-0000-4000-8000-000000000000",
	"hostname":  "example.com",
	"ipv4":      "192.0.2.1",
	"ipv6":      "2001:db8::1",
}

// fromPattern makes a short string the pattern (RE2 syntax, which the
// common ECMA-262 patterns of schemas are) matches: the first branch of
// each alternation, the fewest repetitions, the first rune of each class.
// false when the pattern does not parse or is too long to read.
func fromPattern(p string) (string, bool) {
	if len(p) > maxPattern {
		return "", false
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !emit(&b, re.Simplify(), 0) {
		return "", false
	}
	return b.String(), true
}

func emit(b *strings.Builder, re *syntax.Regexp, depth int) bool {
	if depth > 64 || b.Len() > MaxLength {
		return false
	}
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return false
		}
		r := re.Rune[0]
		// prefer a letter or digit inside the class, for readable values.
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if lo, hi := re.Rune[i], re.Rune[i+1]; hi >= 'a' && lo <= 'z' {
				r = max(lo, 'a')
				break
			}
		}
		b.WriteRune(r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpCapture:
		return emit(b, re.Sub[0], depth+1)
	case syntax.OpPlus:
		return emit(b, re.Sub[0], depth+1)
	case syntax.OpRepeat:
		for range min(re.Min, MaxLength) {
			if !emit(b, re.Sub[0], depth+1) {
				return false
			}
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !emit(b, s, depth+1) {
				return false
			}
		}
	case syntax.OpAlternate:
		return emit(b, re.Sub[0], depth+1)
	case syntax.OpNoMatch:
		return false
	}
	// empty matches: ^ $ \b \B, x*, x?, the empty string.
	return true
}
