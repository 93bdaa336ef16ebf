package flow

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/reinhq/rein/flow/ref"
)

// This file answers "does this schema declare that field?" so validation can
// catch `{extract_info.resume}` when extract_info's schema says `candidate`.
// It is deliberately forgiving: wherever a schema leaves room (no properties
// listed, additionalProperties allowed, $ref it cannot follow), the path is
// accepted.

// maxSchemaHops bounds $ref/allOf expansion so cyclic schemas terminate.
const maxSchemaHops = 64

// undeclared returns a message when path is not declared by schema doc, or "".
// label names the root for the message (e.g. "extract_info").
func undeclared(doc any, path ref.Path, label string) string {
	nodes := []any{doc}
	for i, seg := range path {
		expanded := expand(doc, nodes)
		var next []any
		open := false
		var have []string
		// shaped: some node says something about seg itself; nodes that only
		// point elsewhere ($ref, allOf, …) were expanded and are left out.
		shaped := false
		for _, n := range expanded {
			m, ok := n.(map[string]any)
			if !ok {
				if b, isBool := n.(bool); isBool && b {
					open = true
				}
				continue
			}
			if onlyPoints(m, seg.IsIndex) {
				continue
			}
			shaped = true
			if seg.IsIndex {
				if pre, ok := m["prefixItems"].([]any); ok && seg.Index < len(pre) {
					next = append(next, pre[seg.Index])
				} else if items, ok := m["items"]; ok {
					next = append(next, items)
				} else if declaresType(m, "object", "string", "number", "integer", "boolean", "null") && !declaresType(m, "array") {
					have = append(have, "(not a list)")
				} else {
					open = true
				}
				continue
			}
			props, hasProps := m["properties"].(map[string]any)
			if p, ok := props[seg.Key]; ok {
				next = append(next, p)
				continue
			}
			if ap, ok := m["additionalProperties"]; ok && ap != false {
				next = append(next, ap)
				continue
			}
			if _, ok := m["patternProperties"]; ok {
				open = true
				continue
			}
			if !hasProps {
				if declaresType(m, "array", "string", "number", "integer", "boolean", "null") && !declaresType(m, "object") {
					have = append(have, "(not an object)")
				} else {
					open = true
				}
				continue
			}
			for k := range props {
				have = append(have, k)
			}
		}
		if open || !shaped {
			return ""
		}
		if len(next) == 0 {
			where := label + pathSuffix(path[:i])
			sort.Strings(have)
			have = uniq(have)
			if seg.IsIndex {
				return fmt.Sprintf("%s is not declared as a list by its schema", where)
			}
			if len(have) == 1 && strings.HasPrefix(have[0], "(") {
				return fmt.Sprintf("%s has no field %q: its schema says it is %s", where, seg.Key, strings.Trim(have[0], "()"))
			}
			return fmt.Sprintf("%s has no field %q: its schema declares %s%s", where, seg.Key, listOrNone(have), didYouMean(seg.Key, have))
		}
		nodes = next
	}
	return ""
}

func pathSuffix(p ref.Path) string {
	var b strings.Builder
	for _, s := range p {
		if s.IsIndex {
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
		} else {
			b.WriteString("." + s.Key)
		}
	}
	return b.String()
}

func listOrNone(have []string) string {
	if len(have) == 0 {
		return "no fields"
	}
	return strings.Join(have, ", ")
}

func uniq(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// onlyPoints reports whether schema node m says nothing about a field
// (or, for index, a list item) beyond the $ref or allOf/anyOf/oneOf that
// expand has already followed.
func onlyPoints(m map[string]any, index bool) bool {
	points := false
	for _, k := range []string{"$ref", "allOf", "anyOf", "oneOf"} {
		if _, ok := m[k]; ok {
			points = true
		}
	}
	if !points {
		return false
	}
	own := []string{"properties", "additionalProperties", "patternProperties"}
	if index {
		own = []string{"items", "prefixItems"}
	}
	for _, k := range own {
		if _, ok := m[k]; ok {
			return false
		}
	}
	return true
}

func declaresType(m map[string]any, types ...string) bool {
	switch t := m["type"].(type) {
	case string:
		for _, x := range types {
			if t == x {
				return true
			}
		}
	case []any:
		for _, e := range t {
			for _, x := range types {
				if e == x {
					return true
				}
			}
		}
	}
	return false
}

// expand follows local $refs and allOf/anyOf/oneOf branches.
func expand(root any, nodes []any) []any {
	var out []any
	queue := append([]any(nil), nodes...)
	for hops := 0; len(queue) > 0 && hops < maxSchemaHops; hops++ {
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
				out = append(out, true) // a $ref we cannot follow: accept
			}
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if branches, ok := m[k].([]any); ok {
				queue = append(queue, branches...)
			}
		}
	}
	if len(queue) > 0 {
		out = append(out, true) // too many branches to follow: accept
	}
	return out
}

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
