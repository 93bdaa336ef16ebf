package casegen

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// DefaultMaxCases is the cases one schema gets when Options.MaxCases is 0.
const DefaultMaxCases = 64

// maxEnum bounds the enum members that get a case each.
const maxEnum = 16

// extraProperty is the name of the property a case adds where
// additionalProperties is false.
const extraProperty = "rein_test_extra"

// Case is one generated value for one schema.
type Case struct {
	// Name is the case's stable name: the Options.Prefix, then the field's
	// path and what the case does to it ("input/amount=maximum",
	// "input/-customer (missing)", "input/amount: wrong type",
	// "input/minimal").
	Name string `json:"name"`
	// Pointer is the JSON pointer of the part the case changes ("" for the
	// whole value).
	Pointer string `json:"pointer"`
	// Value is the whole value: the minimal one with the case's change.
	Value any `json:"value"`
	// Valid is what the case is meant to be: a value the schema accepts
	// (true) or one it refuses.
	Valid bool `json:"valid"`
	// Skip, when not empty, says why the case is not what it is meant to
	// be (Options.Check disagreed with Valid); such a case is not run.
	Skip string `json:"skip,omitempty"`
}

// Options shape Generate. Check is required.
type Options struct {
	// Prefix starts every case's name ("input", "step charge args").
	Prefix string
	// Base is a value known to be valid (a flow folder's input.json): the
	// minimal value takes its fields where it has them. Nil: none.
	Base any
	// Check validates a value against the schema (the compiled schema's
	// Validate); it decides whether each case is what it is meant to be.
	Check func(v any) error
	// MaxCases bounds the cases made (0: DefaultMaxCases).
	MaxCases int
}

// Result is what Generate made.
type Result struct {
	Cases []Case `json:"cases"`
	// Dropped counts the cases past MaxCases, which were not made.
	Dropped int `json:"dropped,omitempty"`
}

// Generate makes the cases of the schema doc (JSON values, as
// flow.Schema.Doc holds them): "minimal" first, then, field by field in
// name order (nested objects, and the first item of a list of objects, to
// MaxDepth), a required field missing, the
// field of a wrong type, an optional field given, enum members and a
// value outside the enum, the numeric, length and item-count bounds on
// both sides, a string that breaks the pattern, and a property
// additionalProperties: false refuses. The error says that no minimal
// value the schema accepts could be made.
func Generate(doc any, opts Options) (*Result, error) {
	if opts.Check == nil {
		return nil, errors.New("casegen: Options.Check is required")
	}
	g := &gen{root: doc, opts: opts, max: opts.MaxCases}
	if g.max <= 0 {
		g.max = DefaultMaxCases
	}
	n := at(doc, doc)
	base := minimal(n, opts.Base, 0)
	if err := opts.Check(base); err != nil && opts.Base != nil {
		base = minimal(n, nil, 0)
	}
	if err := opts.Check(base); err != nil {
		return nil, fmt.Errorf("no value it accepts could be made (a pattern or a combination of keywords the generator does not follow): %w", err)
	}
	base = clone(base)
	g.add(opts.Prefix+"/minimal", nil, base, true)
	g.value(n, base, nil, true, 0)
	return &Result{Cases: g.cases, Dropped: g.dropped}, nil
}

type gen struct {
	root    any
	opts    Options
	max     int
	cases   []Case
	dropped int
}

// add appends a case, checked, unless MaxCases are made.
func (g *gen) add(name string, path []string, v any, valid bool) {
	if len(g.cases) >= g.max {
		g.dropped++
		return
	}
	c := Case{Name: name, Pointer: pointer(path), Value: v, Valid: valid}
	err := g.opts.Check(v)
	switch {
	case valid && err != nil:
		c.Skip = "the value made for it is not valid after all (" + err.Error() + ")"
	case !valid && err == nil:
		c.Skip = "the value made to break the schema is valid after all"
	}
	g.cases = append(g.cases, c)
}

// name is a case's name: the prefix, the field's path and rest.
func (g *gen) name(path []string, rest string) string {
	if len(path) == 0 {
		return g.opts.Prefix + rest
	}
	return g.opts.Prefix + "/" + strings.Join(path, "/") + rest
}

// missing is the name of the case without the field name of the object at
// path: "input/customer/-id (missing)".
func (g *gen) missing(path []string, name string) string {
	return g.opts.Prefix + "/" + strings.Join(append(slices.Clip(path), "-"+name), "/") + " (missing)"
}

// value makes the cases of the value at path (schema n) in base.
func (g *gen) value(n node, base any, path []string, required bool, depth int) {
	if types := n.types(); len(types) > 0 && n.m["const"] == nil {
		if w, ok := wrongValue(types); ok {
			g.add(g.name(path, ": wrong type"), path, set(base, path, w), false)
		}
	}
	if !required {
		g.add(g.name(path, " (optional, given)"), path, set(base, path, minimal(n, nil, depth)), true)
	}
	if e, ok := n.m["enum"].([]any); ok {
		for _, m := range e[:min(len(e), maxEnum)] {
			g.add(g.name(path, "="+compact(m)), path, set(base, path, m), true)
		}
		g.add(g.name(path, ": not in enum"), path, set(base, path, notMember(e)), false)
	}
	switch n.kind() {
	case "integer", "number":
		g.numbers(n, base, path)
	case "string":
		g.strings(n, base, path)
	case "array":
		g.items(n, base, path, depth)
		g.firstItem(n, base, path, required, depth)
	case "object":
		if depth < MaxDepth {
			if len(path) > 0 && !required {
				base = set(base, path, minimal(n, nil, depth))
			}
			g.fields(n, base, path, depth)
		}
	}
}

// fields makes the cases of an object's properties, in name order.
func (g *gen) fields(n node, base any, path []string, depth int) {
	props := n.props()
	req := n.required()
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p := append(slices.Clip(path), name)
		isReq := slices.Contains(req, name)
		if isReq {
			g.add(g.missing(path, name), p, del(base, p), false)
		}
		g.value(at(g.root, props[name]), base, p, isReq, depth+1)
	}
	// a required field the properties do not describe: only missing.
	for _, name := range req {
		if _, described := props[name]; !described {
			p := append(slices.Clip(path), name)
			g.add(g.missing(path, name), p, del(base, p), false)
		}
	}
	if ap, ok := n.m["additionalProperties"].(bool); ok && !ap {
		p := append(slices.Clip(path), extraProperty)
		g.add(g.opts.Prefix+"/"+strings.Join(p, "/")+" (additional property)", p, set(base, p, "x"), false)
	}
}

// numbers makes the cases of the numeric bounds: each bound's value and
// the value just past it.
func (g *gen) numbers(n node, base any, path []string) {
	integer := n.kind() == "integer"
	if v, ok := n.number("minimum"); ok {
		g.add(g.name(path, "=minimum"), path, set(base, path, v), true)
		g.add(g.name(path, "<minimum"), path, set(base, path, v-1), false)
	}
	if v, ok := n.number("maximum"); ok {
		g.add(g.name(path, "=maximum"), path, set(base, path, v), true)
		g.add(g.name(path, ">maximum"), path, set(base, path, v+1), false)
	}
	if v, ok := n.number("exclusiveMinimum"); ok {
		g.add(g.name(path, "=exclusiveMinimum"), path, set(base, path, v), false)
		g.add(g.name(path, ">exclusiveMinimum"), path, set(base, path, above(v, integer)), true)
	}
	if v, ok := n.number("exclusiveMaximum"); ok {
		g.add(g.name(path, "=exclusiveMaximum"), path, set(base, path, v), false)
		g.add(g.name(path, "<exclusiveMaximum"), path, set(base, path, below(v, integer)), true)
	}
}

// strings makes the cases of minLength, maxLength and pattern.
func (g *gen) strings(n node, base any, path []string) {
	if l, ok := n.count("minLength"); ok && l <= MaxLength {
		g.add(g.name(path, "=minLength"), path, set(base, path, stringOfLength(n, l)), true)
		if l > 0 {
			g.add(g.name(path, "<minLength"), path, set(base, path, stringOfLength(n, l-1)), false)
		}
	}
	if h, ok := n.count("maxLength"); ok && h < MaxLength {
		g.add(g.name(path, "=maxLength"), path, set(base, path, stringOfLength(n, h)), true)
		g.add(g.name(path, ">maxLength"), path, set(base, path, stringOfLength(n, h+1)), false)
	}
	if _, ok := n.m["pattern"].(string); ok {
		g.add(g.name(path, ": breaks pattern"), path, set(base, path, "!"), false)
	}
}

// items makes the cases of minItems and maxItems.
func (g *gen) items(n node, base any, path []string, depth int) {
	item := n.child("items")
	list := func(k int) []any {
		out := make([]any, k)
		for i := range out {
			out[i] = minimal(item, nil, depth+1)
		}
		return out
	}
	if k, ok := n.count("minItems"); ok && k <= MaxLength {
		g.add(g.name(path, "=minItems"), path, set(base, path, list(k)), true)
		if k > 0 {
			g.add(g.name(path, "<minItems"), path, set(base, path, list(k-1)), false)
		}
	}
	if k, ok := n.count("maxItems"); ok && k < MaxLength {
		g.add(g.name(path, "=maxItems"), path, set(base, path, list(k)), true)
		g.add(g.name(path, ">maxItems"), path, set(base, path, list(k+1)), false)
	}
}

// firstItem makes the cases of the fields of a list's first item, when
// its items are objects: "items/0/-title (missing)". The list gets one
// minimal item when it has none.
func (g *gen) firstItem(n node, base any, path []string, required bool, depth int) {
	item := n.child("items")
	if item.kind() != "object" || depth >= MaxDepth {
		return
	}
	list, _ := lookup(base, path).([]any)
	if !required || len(list) == 0 {
		if max, ok := n.count("maxItems"); ok && max == 0 {
			return
		}
		base = set(base, path, []any{minimal(item, nil, depth+1)})
	}
	g.fields(item, base, append(slices.Clip(path), "0"), depth+1)
}

// lookup is the value at path in v, or nil.
func lookup(v any, path []string) any {
	for _, k := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, ok := index(x, k)
			if !ok {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// wrongValue is a value of the first JSON type the schema's types do not
// allow (an integer allows no number that is not whole).
func wrongValue(types []string) (any, bool) {
	allows := func(t string) bool { return slices.Contains(types, t) }
	switch {
	case !allows("string"):
		return "wrong type", true
	case !allows("number") && !allows("integer"):
		return 0.0, true
	case !allows("number"):
		return 0.5, true
	case !allows("boolean"):
		return true, true
	case !allows("object"):
		return map[string]any{}, true
	case !allows("array"):
		return []any{}, true
	case !allows("null"):
		return nil, true
	}
	return nil, false
}

// notMember is a value no member of e equals.
func notMember(e []any) any {
	v := "rein-test-not-in-enum"
	taken := func(m any) bool { s, ok := m.(string); return ok && s == v }
	for i := 0; slices.ContainsFunc(e, taken); i++ {
		v = fmt.Sprintf("rein-test-not-in-enum-%d", i)
	}
	return v
}

// compact is v as short JSON, for a case's name.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	return s
}

// pointer is path as an RFC 6901 JSON pointer.
func pointer(path []string) string {
	var b strings.Builder
	for _, t := range path {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// set returns a copy of base with v at path (objects made on the way; a
// path element into a list is an index the list has).
func set(base any, path []string, v any) any {
	if len(path) == 0 {
		return clone(v)
	}
	if l, ok := base.([]any); ok {
		if i, ok := index(l, path[0]); ok {
			out := clone(l).([]any)
			out[i] = set(l[i], path[1:], v)
			return out
		}
	}
	m, _ := base.(map[string]any)
	out := make(map[string]any, len(m)+1)
	for k, x := range m {
		out[k] = clone(x)
	}
	out[path[0]] = set(m[path[0]], path[1:], v)
	return out
}

// del returns a copy of base without the field at path.
func del(base any, path []string) any {
	out := clone(base)
	cur := out
	for i, k := range path {
		if l, ok := cur.([]any); ok {
			j, ok := index(l, k)
			if !ok {
				return out
			}
			cur = l[j]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return out
		}
		if i == len(path)-1 {
			delete(m, k)
			return out
		}
		cur = m[k]
	}
	return out
}

// index reads a path element as an index of l.
func index(l []any, k string) (int, bool) {
	i, err := strconv.Atoi(k)
	return i, err == nil && i >= 0 && i < len(l)
}

// clone deep-copies JSON values (maps and lists; leaves are immutable).
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clone(e)
		}
		return out
	}
	return v
}
