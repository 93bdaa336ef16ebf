package schema

import (
	"slices"
	"sort"
	"strings"
)

// This file answers two questions about a JSON Schema document without
// validating anything: "does the schema declare this path?" and "what JSON
// type does it give the value there?". Wherever a schema leaves room — no
// properties listed, additionalProperties allowed, patternProperties, a
// $ref it cannot follow — the answer is "declared, type unknown", so a
// reference is never rejected for what a schema does not say.

// maxHops bounds $ref/allOf expansion so cyclic schemas terminate.
const maxHops = 64

// Type is a set of JSON types, as a schema's "type" keyword gives them.
// Zero means the schema does not say.
type Type uint8

// The JSON types.
const (
	Null Type = 1 << iota
	Boolean
	Object
	Array
	Number
	Integer
	String
)

var typeBits = map[string]Type{"null": Null, "boolean": Boolean, "object": Object, "array": Array, "number": Number, "integer": Integer, "string": String}

// TypeOf returns the types schema node m's "type" keyword names (a string
// or a list of strings); zero when it names none it knows.
func TypeOf(m map[string]any) Type {
	var bits Type
	switch t := m["type"].(type) {
	case string:
		bits = typeBits[t]
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				bits |= typeBits[s]
			}
		}
	}
	return bits
}

// String names the types for a message: "a string or a number"; empty for
// zero.
func (t Type) String() string {
	var names []string
	for _, n := range []struct {
		b    Type
		name string
	}{{String, "a string"}, {Number, "a number"}, {Integer, "an integer"}, {Boolean, "a boolean"}, {Object, "an object"}, {Array, "a list"}, {Null, "null"}} {
		if t&n.b != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, " or ")
}

// At is a place in a schema document: the schema nodes that describe the
// value a path from the document's root reaches, with local $refs and
// allOf/anyOf/oneOf branches followed. Start at Root and step with Field
// and Item. An At is a value; stepping does not change it.
type At struct {
	root  any
	nodes []any
	open  bool
}

// Root returns the place of the whole document doc (JSON values, as
// encoding/json decodes them into any).
func Root(doc any) At {
	return At{root: doc, nodes: expand(doc, []any{doc})}
}

// Undeclared says why a schema does not declare a step of a path.
type Undeclared struct {
	// Fields are the properties the schema declares where a field was
	// asked for, sorted, each once.
	Fields []string
	// Types holds, for each schema node whose type rules the step out (a
	// string asked for a field, an object asked for an item), its types,
	// in schema order.
	Types []Type
}

// Open reports whether some branch leaves the value at a unconstrained: then
// every path below it is declared and its type is unknown.
func (a At) Open() bool { return a.open }

// Field steps to the value of property key. It returns a non-nil
// Undeclared when the schema declares the value at a and no such property
// (no properties, additionalProperties or patternProperties admit it).
func (a At) Field(key string) (At, *Undeclared) { return a.step(key, 0, false) }

// Item steps to list item i. It returns a non-nil Undeclared when the
// schema declares the value at a and no such item (prefixItems is shorter
// and items is false or absent from a schema typed as no list).
func (a At) Item(i int) (At, *Undeclared) { return a.step("", i, true) }

func (a At) step(key string, index int, isIndex bool) (At, *Undeclared) {
	if a.open {
		return a, nil
	}
	opened := At{root: a.root, open: true}
	var next []any
	var miss Undeclared
	// shaped: some node says something about the step itself; nodes that
	// only point elsewhere ($ref, allOf, …) were expanded and are left out.
	shaped := false
	for _, n := range a.nodes {
		m, ok := n.(map[string]any)
		if !ok {
			if n == true {
				return opened, nil
			}
			continue
		}
		if onlyPoints(m, isIndex) {
			continue
		}
		shaped = true
		if isIndex {
			if pre, ok := m["prefixItems"].([]any); ok && index < len(pre) {
				next = append(next, pre[index])
			} else if items, ok := m["items"]; ok {
				if items != false {
					next = append(next, items)
				}
			} else if t := TypeOf(m); t != 0 && t&Array == 0 {
				miss.Types = append(miss.Types, t)
			} else {
				return opened, nil
			}
			continue
		}
		props, hasProps := m["properties"].(map[string]any)
		if p, ok := props[key]; ok {
			next = append(next, p)
			continue
		}
		if ap, ok := m["additionalProperties"]; ok && ap != false {
			next = append(next, ap)
			continue
		}
		if _, ok := m["patternProperties"]; ok {
			return opened, nil
		}
		if !hasProps {
			if t := TypeOf(m); t != 0 && t&Object == 0 {
				miss.Types = append(miss.Types, t)
			} else {
				return opened, nil
			}
			continue
		}
		for k := range props {
			miss.Fields = append(miss.Fields, k)
		}
	}
	if !shaped {
		return opened, nil
	}
	if len(next) == 0 {
		sort.Strings(miss.Fields)
		miss.Fields = slices.Compact(miss.Fields)
		return a, &miss
	}
	return At{root: a.root, nodes: expand(a.root, next)}, nil
}

// Types returns the JSON types the schema allows for the value at a, or
// zero when it does not say (a is open, or some node has no "type").
func (a At) Types() Type {
	if a.open {
		return 0
	}
	var bits Type
	for _, n := range a.nodes {
		m, ok := n.(map[string]any)
		if !ok {
			if n == true {
				return 0
			}
			continue
		}
		if _, typed := m["type"]; !typed && hasPointer(m) && !declaresOwn(m, false) && !declaresOwn(m, true) {
			continue // the nodes it points to say
		}
		b := TypeOf(m)
		if b == 0 {
			return 0
		}
		bits |= b
	}
	return bits
}

// onlyPoints reports whether schema node m says nothing about a field (or,
// for index, a list item) beyond the $ref or allOf/anyOf/oneOf that expand
// has already followed: it has none of the keywords that declare one, and
// no type, or a type that admits one (an object for a field, a list for an
// item) and so leaves the question to where it points.
func onlyPoints(m map[string]any, index bool) bool {
	if !hasPointer(m) || declaresOwn(m, index) {
		return false
	}
	if _, typed := m["type"]; !typed {
		return true
	}
	kind := Object
	if index {
		kind = Array
	}
	return TypeOf(m)&kind != 0
}

// declaresOwn reports whether m has a keyword that declares fields (or,
// for index, list items).
func declaresOwn(m map[string]any, index bool) bool {
	own := []string{"properties", "additionalProperties", "patternProperties"}
	if index {
		own = []string{"items", "prefixItems"}
	}
	for _, k := range own {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func hasPointer(m map[string]any) bool {
	for _, k := range [...]string{"$ref", "allOf", "anyOf", "oneOf"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// expand follows local $refs and allOf/anyOf/oneOf branches. A $ref it
// cannot follow, or too many branches, add true (anything).
func expand(root any, nodes []any) []any {
	if len(nodes) == 1 {
		if m, ok := nodes[0].(map[string]any); ok && !hasPointer(m) {
			return nodes
		}
	}
	var out []any
	queue := append([]any(nil), nodes...)
	for hops := 0; len(queue) > 0 && hops < maxHops; hops++ {
		n := queue[0]
		queue = queue[1:]
		out = append(out, n)
		m, ok := n.(map[string]any)
		if !ok {
			continue
		}
		if r, ok := m["$ref"].(string); ok {
			if target, ok := localRef(root, r); ok {
				queue = append(queue, target)
			} else {
				out = append(out, true)
			}
		}
		for _, k := range [...]string{"allOf", "anyOf", "oneOf"} {
			if branches, ok := m[k].([]any); ok {
				queue = append(queue, branches...)
			}
		}
	}
	if len(queue) > 0 {
		out = append(out, true)
	}
	return out
}

// localRef resolves a $ref of the form "#/a/b" (RFC 6901 escapes) within
// root; false for any other reference or a pointer that finds nothing.
func localRef(root any, r string) (any, bool) {
	if !strings.HasPrefix(r, "#") {
		return nil, false
	}
	cur := root
	for _, tok := range strings.Split(strings.TrimPrefix(r[1:], "/"), "/") {
		if tok == "" {
			continue
		}
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
