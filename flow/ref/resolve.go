package ref

import (
	"fmt"
	"sort"
	"strings"
)

// maxListedKeys bounds how many available keys a MissingError lists.
const maxListedKeys = 20

// MissingError reports that Resolve could not follow Path: segment At is the
// one that failed (0 is the root name). Reason is the complete message, for
// example `field "resume" not found in extract_info (has: name, years)`.
type MissingError struct {
	Path   Path
	At     int
	Reason string
}

// Error returns Reason.
func (e *MissingError) Error() string { return e.Reason }

// Resolve follows p through v: a key segment indexes a map[string]any, an
// index segment a []any. The first segment is looked up in v itself, so v is
// usually the scope map. Resolve returns a *MissingError when a key is
// absent, an index is out of range or a segment does not fit the value it
// is applied to. It does not allocate when it succeeds.
func Resolve(v any, p Path) (any, error) {
	cur := v
	for i, seg := range p {
		switch c := cur.(type) {
		case map[string]any:
			if seg.IsIndex {
				return nil, missing(p, i, fmt.Sprintf("cannot index an object with [%d]%s", seg.Index, in(p, i)))
			}
			next, ok := c[seg.Key]
			if !ok {
				return nil, missing(p, i, fmt.Sprintf("%s %q not found%s (has: %s)", noun(i), seg.Key, in(p, i), keyList(c)))
			}
			cur = next
		case []any:
			if !seg.IsIndex {
				return nil, missing(p, i, fmt.Sprintf("cannot read field %q of a list%s", seg.Key, in(p, i)))
			}
			if seg.Index < 0 || seg.Index >= len(c) {
				return nil, missing(p, i, fmt.Sprintf("index %d out of range%s (length %d)", seg.Index, in(p, i), len(c)))
			}
			cur = c[seg.Index]
		default:
			if seg.IsIndex {
				return nil, missing(p, i, fmt.Sprintf("cannot index %s with [%d]%s", TypeName(cur), seg.Index, in(p, i)))
			}
			return nil, missing(p, i, fmt.Sprintf("cannot read field %q of %s%s", seg.Key, TypeName(cur), in(p, i)))
		}
	}
	return cur, nil
}

func missing(p Path, at int, reason string) *MissingError {
	return &MissingError{Path: p, At: at, Reason: reason}
}

func noun(i int) string {
	if i == 0 {
		return "name"
	}
	return "field"
}

// in names the container the failing segment was applied to: " in a.b".
func in(p Path, i int) string {
	if i == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" in ")
	p.writeTo(&b, i)
	return b.String()
}

func keyList(m map[string]any) string {
	if len(m) == 0 {
		return "no fields"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > maxListedKeys {
		return strings.Join(keys[:maxListedKeys], ", ") + fmt.Sprintf(", … %d more", len(keys)-maxListedKeys)
	}
	return strings.Join(keys, ", ")
}

// TypeName names the JSON type of v with an article, for messages:
// "null", "a boolean", "a number", "a string", "a list", "an object";
// other Go types are named "a value of type T".
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("a value of type %T", v)
	}
}
