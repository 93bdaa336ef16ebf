package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/reinhq/rein/flow/ref"
)

// This file answers two questions about a JSON Schema document without
// validating anything: "does the schema declare this path?" (for $ref into a
// tool's output) and "what JSON type does it give the value there?" (to
// check a $ref against the input property it feeds). Wherever a schema
// leaves room — no properties listed, additionalProperties allowed,
// patternProperties, a $ref it cannot follow — the answer is "declared,
// type unknown", so a plan is never rejected for what a schema does not say.

// maxSchemaHops bounds $ref/allOf expansion so cyclic schemas terminate.
const maxSchemaHops = 64

// JSON types as bits.
const (
	tNull uint8 = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeBits = map[string]uint8{"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray, "number": tNumber, "integer": tInteger, "string": tString}

// walkSchema follows path through root. It returns the schema nodes that
// describe the value at path (expanded), open when some branch leaves the
// value unconstrained, and a message (with label naming the root) when the
// schema does not declare the path.
func walkSchema(root any, path []ref.Segment, label string) (nodes []any, open bool, msg string) {
	nodes = expandSchema(root, []any{root})
	for i, seg := range path {
		var have []string
		var nextNodes []any
		shaped := false
		for _, n := range nodes {
			m, ok := n.(map[string]any)
			if !ok {
				if b, isBool := n.(bool); isBool && b {
					return nil, true, ""
				}
				continue
			}
			if onlyPoints(m, seg.IsIndex) {
				continue
			}
			shaped = true
			if seg.IsIndex {
				if pre, ok := m["prefixItems"].([]any); ok && seg.Index < len(pre) {
					nextNodes = append(nextNodes, pre[seg.Index])
				} else if items, ok := m["items"]; ok {
					if items != false {
						nextNodes = append(nextNodes, items)
					}
				} else if declares(m, tObject|tString|tNumber|tInteger|tBoolean|tNull) && !declares(m, tArray) {
					have = append(have, "("+typeNames(typeOf(m))+")")
				} else {
					return nil, true, ""
				}
				continue
			}
			props, hasProps := m["properties"].(map[string]any)
			if p, ok := props[seg.Key]; ok {
				nextNodes = append(nextNodes, p)
				continue
			}
			if ap, ok := m["additionalProperties"]; ok && ap != false {
				nextNodes = append(nextNodes, ap)
				continue
			}
			if _, ok := m["patternProperties"]; ok {
				return nil, true, ""
			}
			if !hasProps {
				if declares(m, tArray|tString|tNumber|tInteger|tBoolean|tNull) && !declares(m, tObject) {
					have = append(have, "("+typeNames(typeOf(m))+")")
				} else {
					return nil, true, ""
				}
				continue
			}
			for k := range props {
				have = append(have, k)
			}
		}
		if !shaped {
			return nil, true, ""
		}
		if len(nextNodes) == 0 {
			where := label + segmentsString(path[:i])
			sort.Strings(have)
			have = uniq(have)
			if len(have) == 1 && strings.HasPrefix(have[0], "(") {
				if seg.IsIndex {
					return nil, false, fmt.Sprintf("%s cannot be indexed with [%d]: it is declared as %s", where, seg.Index, strings.Trim(have[0], "()"))
				}
				return nil, false, fmt.Sprintf("%s has no field %q: it is declared as %s", where, seg.Key, strings.Trim(have[0], "()"))
			}
			if seg.IsIndex {
				return nil, false, fmt.Sprintf("%s is not declared as a list", where)
			}
			return nil, false, fmt.Sprintf("%s has no field %q: declared fields are %s%s", where, seg.Key, listOrNone(have), didYouMean(seg.Key, have))
		}
		nodes = expandSchema(root, nextNodes)
	}
	return nodes, false, ""
}

// schemaTypes returns the JSON types the nodes allow, or 0 when they do not
// say (some node has no "type", or allows anything).
func schemaTypes(nodes []any, open bool) uint8 {
	if open {
		return 0
	}
	var bits uint8
	for _, n := range nodes {
		m, ok := n.(map[string]any)
		if !ok {
			if n == true {
				return 0
			}
			continue
		}
		if onlyPoints(m, false) && onlyPoints(m, true) {
			continue
		}
		b := typeOf(m)
		if b == 0 {
			return 0
		}
		bits |= b
	}
	return bits
}

func typeOf(m map[string]any) uint8 {
	var bits uint8
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

// compatible reports whether a value of types out may satisfy types in;
// numbers and integers are taken as one type (a number may be integral).
func compatible(out, in uint8) bool {
	if out == 0 || in == 0 {
		return true
	}
	const num = tNumber | tInteger
	if out&num != 0 {
		out |= num
	}
	if in&num != 0 {
		in |= num
	}
	return out&in != 0
}

func typeNames(bits uint8) string {
	var names []string
	for _, n := range []struct {
		b    uint8
		name string
	}{{tString, "a string"}, {tNumber, "a number"}, {tInteger, "an integer"}, {tBoolean, "a boolean"}, {tObject, "an object"}, {tArray, "a list"}, {tNull, "null"}} {
		if bits&n.b != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, " or ")
}

func declares(m map[string]any, bits uint8) bool { return typeOf(m)&bits != 0 }

// onlyPoints reports whether schema node m says nothing about a field (or,
// for index, a list item) beyond the $ref or allOf/anyOf/oneOf that
// expandSchema has already followed.
func onlyPoints(m map[string]any, index bool) bool {
	points := false
	for _, k := range [...]string{"$ref", "allOf", "anyOf", "oneOf"} {
		if _, ok := m[k]; ok {
			points = true
			break
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
	_, typed := m["type"]
	return !typed
}

// expandSchema follows local $refs and allOf/anyOf/oneOf branches. A $ref it
// cannot follow, or too many branches, add true (anything).
func expandSchema(root any, nodes []any) []any {
	if len(nodes) == 1 {
		if m, ok := nodes[0].(map[string]any); ok && !hasPointer(m) {
			return nodes
		}
	}
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

func hasPointer(m map[string]any) bool {
	for _, k := range [...]string{"$ref", "allOf", "anyOf", "oneOf"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
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

func segmentsString(p []ref.Segment) string {
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
		return "none"
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

// didYouMean suggests the closest of have to s, when one is close.
func didYouMean(s string, have []string) string {
	best, bestD := "", 3
	for _, h := range have {
		if d := distance(s, h); d < bestD && d < len(s) {
			best, bestD = h, d
		}
	}
	if best == "" && len(s) >= 3 {
		for _, h := range have {
			if strings.HasPrefix(h, s) || strings.HasPrefix(s, h) && len(h) >= 3 {
				best = h
				break
			}
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance of a and b, in bytes.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
