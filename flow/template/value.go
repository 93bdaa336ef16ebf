package template

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ValueError reports a string leaf of a Value that is not a valid
// template, or a leaf of an unsupported Go type. Pointer is the RFC 6901
// JSON pointer of the leaf ("" for the root, "/to/0" for the first item of
// "to").
type ValueError struct {
	Pointer string
	Err     error
}

// Error returns the pointer and the cause.
func (e *ValueError) Error() string {
	p := e.Pointer
	if p == "" {
		p = "/"
	}
	return fmt.Sprintf("%s: %v", p, e.Err)
}

// Unwrap returns Err.
func (e *ValueError) Unwrap() error { return e.Err }

// ValueRef is a placeholder inside a Value: the JSON pointer of its string
// leaf plus the Ref within that leaf's template.
type ValueRef struct {
	Pointer string
	Ref
}

// Value is a compiled args tree: JSON values whose string leaves are
// templates. Values are immutable and safe for concurrent use.
type Value struct {
	root node
	refs []ValueRef
	// static is the rendered tree when there are no placeholders; it is
	// shared by every Render call.
	static any
}

// node is one compiled value: a constant, a template, a map or a list.
type node struct {
	kind  nodeKind
	konst any
	tmpl  *Template
	ptr   string   // JSON pointer of a template leaf, for errors
	keys  []string // sorted map keys
	elems []node   // map values in key order, or list items
}

type nodeKind uint8

const (
	kindConst nodeKind = iota
	kindTemplate
	kindMap
	kindList
)

// ParseValue compiles v, a tree of map[string]any, []any, strings and JSON
// scalars (nil, bool, float64, int, int64 and other Go numbers). Every string
// leaf is parsed as a template. It returns every bad leaf, in JSON pointer
// order, not just the first; the Value is nil when there are errors. The
// input is never retained or modified.
func ParseValue(v any) (*Value, []*ValueError) {
	c := compiler{}
	root := c.compile(v, "")
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	val := &Value{root: root, refs: c.refs}
	if len(c.refs) == 0 {
		val.static, _ = root.render(nil, nil)
	}
	return val, nil
}

type compiler struct {
	refs []ValueRef
	errs []*ValueError
}

func (c *compiler) compile(v any, ptr string) node {
	switch x := v.(type) {
	case string:
		t, err := Parse(x)
		if err != nil {
			c.errs = append(c.errs, &ValueError{Pointer: ptr, Err: err})
			return node{}
		}
		if text, ok := t.Text(); ok {
			return node{kind: kindConst, konst: text}
		}
		for _, r := range t.refs {
			c.refs = append(c.refs, ValueRef{Pointer: ptr, Ref: r})
		}
		return node{kind: kindTemplate, tmpl: t, ptr: ptr}
	case map[string]any:
		n := node{kind: kindMap, keys: make([]string, 0, len(x))}
		for k := range x {
			n.keys = append(n.keys, k)
		}
		sort.Strings(n.keys)
		n.elems = make([]node, len(n.keys))
		for i, k := range n.keys {
			n.elems[i] = c.compile(x[k], ptr+"/"+escapePointer(k))
		}
		return n
	case []any:
		n := node{kind: kindList, elems: make([]node, len(x))}
		for i, e := range x {
			n.elems[i] = c.compile(e, ptr+"/"+strconv.Itoa(i))
		}
		return n
	case nil, bool, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return node{kind: kindConst, konst: x}
	default:
		c.errs = append(c.errs, &ValueError{Pointer: ptr, Err: fmt.Errorf("unsupported value of type %T; want a JSON value", v)})
		return node{}
	}
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// escapePointer escapes a key for use as an RFC 6901 reference token.
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return pointerEscaper.Replace(k)
}

// Refs returns every placeholder of the tree, in JSON pointer order (map
// keys sorted) and, within a leaf, in source order. The slice is a copy.
func (v *Value) Refs() []ValueRef {
	return append([]ValueRef(nil), v.refs...)
}

// IsLiteral reports whether the tree has no placeholders.
func (v *Value) IsLiteral() bool { return len(v.refs) == 0 }

// Render returns a new tree with every template leaf rendered against
// scope (see Template.Render; a leaf that is exactly one placeholder keeps
// the referenced value, which is not copied). The parsed input is never
// modified. When the tree has no placeholders, Render returns the same
// shared tree on every call: callers must treat results as read-only, or
// copy them before modifying. The first failing leaf's error is returned,
// as a *ValueError naming its pointer and wrapping the *RenderError.
func (v *Value) Render(scope map[string]any) (any, error) {
	return v.RenderBounded(scope, nil)
}

// RenderBounded is Render within b: it stops with a *SizeError as soon as the tree's size as JSON passes b.MaxBytes (a
// placeholder that keeps a value counts that value's size), and with the
// context's cause once b.Ctx ends.
func (v *Value) RenderBounded(scope map[string]any, b *Bounds) (any, error) {
	m := newMeter(b)
	if len(v.refs) == 0 {
		return v.static, m.addValue(v.static)
	}
	return v.root.render(scope, m)
}

// render builds the output tree of n.
func (n *node) render(scope map[string]any, m *meter) (any, error) {
	switch n.kind {
	case kindTemplate:
		out, err := n.tmpl.render(scope, m)
		if err != nil {
			var re *RenderError
			if !errors.As(err, &re) {
				return nil, err // the bounds' own errors concern the whole tree
			}
			return nil, &ValueError{Pointer: n.ptr, Err: err}
		}
		return out, nil
	case kindMap:
		if err := m.add(2); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			if err := m.add(int64(len(k)) + 4); err != nil {
				return nil, err
			}
			e, err := n.elems[i].render(scope, m)
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		return out, nil
	case kindList:
		if err := m.add(2); err != nil {
			return nil, err
		}
		l := make([]any, len(n.elems))
		for i := range n.elems {
			if err := m.add(1); err != nil {
				return nil, err
			}
			e, err := n.elems[i].render(scope, m)
			if err != nil {
				return nil, err
			}
			l[i] = e
		}
		return l, nil
	default:
		return n.konst, m.addValue(n.konst)
	}
}
