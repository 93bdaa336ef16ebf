package plan

import (
	"math"
	"reflect"

	"github.com/reinhq/rein/value/schema"
)

// quick is a fast acceptance test for the common, simple input schemas
// (type, properties, required, additionalProperties, items, enum, bounds):
// it answers "valid" only where the full validator would, so validation may
// skip the library call on the success path. Anything it does not model —
// and every failure — goes to the library, so messages always come from
// there. A nil *quick models nothing.
type quick struct {
	types    schema.Type // 0: any
	props    map[string]*quick
	required []string
	addl     *quick // nil with closed: no other properties
	closed   bool
	items    *quick
	enum     []any
	min, max *float64
}

var quickAnnotations = map[string]bool{"description": true, "title": true, "default": true, "examples": true, "$schema": true, "$comment": true}

// compileQuick returns the quick form of schema doc, or nil when doc uses
// anything it does not model.
func compileQuick(doc any, depth int) *quick {
	if depth > 16 {
		return nil
	}
	if b, ok := doc.(bool); ok {
		if b {
			return &quick{}
		}
		return nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	q := &quick{}
	for k, v := range m {
		switch k {
		case "type":
			if q.types = schema.TypeOf(m); q.types == 0 {
				return nil
			}
		case "properties":
			ps, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			q.props = make(map[string]*quick, len(ps))
			for name, sub := range ps {
				if q.props[name] = compileQuick(sub, depth+1); q.props[name] == nil {
					return nil
				}
			}
		case "required":
			l, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, e := range l {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				q.required = append(q.required, s)
			}
		case "additionalProperties":
			if v == false {
				q.closed = true
			} else if q.addl = compileQuick(v, depth+1); q.addl == nil {
				return nil
			}
		case "items":
			if q.items = compileQuick(v, depth+1); q.items == nil {
				return nil
			}
		case "enum":
			l, ok := v.([]any)
			if !ok || len(l) == 0 {
				return nil
			}
			q.enum = l
		case "minimum", "maximum":
			f, ok := v.(float64)
			if !ok {
				return nil
			}
			if k == "minimum" {
				q.min = &f
			} else {
				q.max = &f
			}
		default:
			if !quickAnnotations[k] {
				return nil
			}
		}
	}
	return q
}

// valid reports whether v surely satisfies q. With refs, an object
// {"$ref": "…"} stands for a value that satisfies its schema (its type is
// checked on its own, the rest only once it resolves).
func (q *quick) valid(v any, refs bool) bool {
	if refs {
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			if _, isRef := m["$ref"]; isRef {
				return true
			}
		}
	}
	if q.types != 0 && q.types&jsonType(v) == 0 {
		return false
	}
	if q.enum != nil {
		found := false
		for _, e := range q.enum {
			if reflect.DeepEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	switch x := v.(type) {
	case float64:
		if (q.min != nil && x < *q.min) || (q.max != nil && x > *q.max) {
			return false
		}
	case map[string]any:
		for _, r := range q.required {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, e := range x {
			sub, ok := q.props[k]
			if !ok {
				if q.closed {
					return false
				}
				sub = q.addl
			}
			if sub != nil && !sub.valid(e, refs) {
				return false
			}
		}
	case []any:
		if q.items != nil {
			for _, e := range x {
				if !q.items.valid(e, refs) {
					return false
				}
			}
		}
	}
	return true
}

// jsonType returns the type bits v has; an integral number is both a
// number and an integer.
func jsonType(v any) schema.Type {
	switch x := v.(type) {
	case nil:
		return schema.Null
	case bool:
		return schema.Boolean
	case string:
		return schema.String
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return schema.Number | schema.Integer
		}
		return schema.Number
	case map[string]any:
		return schema.Object
	case []any:
		return schema.Array
	}
	return 0
}
