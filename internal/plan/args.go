package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/reinhq/rein/flow/ref"
)

// argRef is one {"$ref": "…"} found in a step's args.
type argRef struct {
	ptr  string   // where in args, as a JSON pointer relative to args
	path ref.Path // the reference; path[0] is the step id
	raw  string
	// fill stands in for the reference when the literal args are checked:
	// a value of the type the input schema wants there, so the check does
	// not trip over it.
	fill any
}

// findRefs walks args value x at location at, calling found for each
// reference (at is only valid during the call) and bad(ptr, message) for
// each malformed one.
func findRefs(x any, at []ref.Segment, found func(at []ref.Segment, ptr, raw string, path ref.Path), bad func(ptr, msg string)) {
	switch v := x.(type) {
	case map[string]any:
		if r, ok := v["$ref"]; ok {
			ptr := segmentsPointer(at)
			s, isStr := r.(string)
			switch {
			case len(v) != 1:
				bad(ptr, `an object with "$ref" is a reference and holds nothing else; move the other keys out of it`)
			case !isStr:
				bad(ptr+"/$ref", fmt.Sprintf(`$ref must be a string "step_id.path", got %s`, ref.TypeName(r)))
			default:
				p, err := ref.Parse(s)
				if err != nil {
					bad(ptr, fmt.Sprintf("$ref %q is not a reference like \"step_id.field\": %v", s, err))
					return
				}
				found(at, ptr, s, p)
			}
			return
		}
		if len(v) == 1 {
			for k, e := range v {
				switch e.(type) {
				case map[string]any, []any:
					findRefs(e, append(at, ref.Segment{Key: k}), found, bad)
				}
			}
			return
		}
		var buf [8]string
		keys := buf[:0]
		for k, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			findRefs(v[k], append(at, ref.Segment{Key: k}), found, bad)
		}
	case []any:
		for i, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				findRefs(e, append(at, ref.Segment{Index: i, IsIndex: true}), found, bad)
			}
		}
	}
}

// segmentsPointer writes at as a JSON pointer.
func segmentsPointer(at []ref.Segment) string {
	if len(at) == 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(16 * len(at))
	for _, s := range at {
		b.WriteByte('/')
		if s.IsIndex {
			b.WriteString(strconv.Itoa(s.Index))
		} else {
			b.WriteString(pointerToken(s.Key))
		}
	}
	return b.String()
}

// substitute returns a copy of x in which every reference object is
// replaced by fill(ref); parts without references are shared, not copied.
// It reports whether anything was replaced.
func substitute(x any, fill func(path string) (any, error)) (any, bool, error) {
	switch v := x.(type) {
	case map[string]any:
		if r, ok := v["$ref"]; ok && len(v) == 1 {
			if s, ok := r.(string); ok {
				out, err := fill(s)
				return out, true, err
			}
		}
		var out map[string]any
		for k, e := range v {
			ne, changed, err := substitute(e, fill)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = make(map[string]any, len(v))
					for k2, e2 := range v {
						out[k2] = e2
					}
				}
				out[k] = ne
			}
		}
		if out == nil {
			return x, false, nil
		}
		return out, true, nil
	case []any:
		var out []any
		for i, e := range v {
			ne, changed, err := substitute(e, fill)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = slices.Clone(v)
				}
				out[i] = ne
			}
		}
		if out == nil {
			return x, false, nil
		}
		return out, true, nil
	}
	return x, false, nil
}
