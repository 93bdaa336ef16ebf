package plan

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/reinhq/rein/flow/ref"
)

// argRef is one {"$ref": "…"} found in a step's args.
type argRef struct {
	at   []ref.Segment // where in args (keys and list indexes)
	ptr  string        // the same as a JSON pointer relative to args
	path ref.Path      // the reference; path[0] is the step id
	raw  string
}

// isRefObject reports whether m is meant as a reference: it has a "$ref" key.
func isRefObject(m map[string]any) bool {
	_, ok := m["$ref"]
	return ok
}

// findRefs walks args value x at location at/ptr, collecting references and
// reporting malformed ones through bad(ptr, message).
func findRefs(x any, at []ref.Segment, ptr string, refs *[]argRef, bad func(ptr, msg string)) {
	switch v := x.(type) {
	case map[string]any:
		if r, ok := v["$ref"]; ok {
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
				*refs = append(*refs, argRef{at: slices.Clone(at), ptr: ptr, path: p, raw: s})
			}
			return
		}
		if len(v) == 1 {
			for k, e := range v {
				findRefs(e, append(at, ref.Segment{Key: k}), ptr+"/"+pointerToken(k), refs, bad)
			}
			return
		}
		var buf [8]string
		keys := buf[:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			findRefs(v[k], append(at, ref.Segment{Key: k}), ptr+"/"+pointerToken(k), refs, bad)
		}
	case []any:
		for i, e := range v {
			findRefs(e, append(at, ref.Segment{Index: i, IsIndex: true}), ptr+"/"+strconv.Itoa(i), refs, bad)
		}
	}
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
