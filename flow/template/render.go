package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/value"
)

// RenderError reports a placeholder that could not be rendered. Err is
// usually a *ref.MissingError.
type RenderError struct {
	Ref Ref
	Err error
}

// Error names the placeholder, its offset and the cause.
func (e *RenderError) Error() string {
	return fmt.Sprintf("placeholder {%s} at offset %d: %v", e.Ref.Path, e.Ref.Offset, e.Err)
}

// Unwrap returns Err.
func (e *RenderError) Unwrap() error { return e.Err }

// Render substitutes the placeholders: the first path segment is looked up
// in scope, the rest with ref.Resolve. A Single template returns the value
// itself (not copied); any other template returns a string. A missing name
// or field is a *RenderError wrapping a *ref.MissingError; a value that
// cannot be encoded as JSON is a *RenderError too.
func (t *Template) Render(scope map[string]any) (any, error) {
	return t.render(scope, nil)
}

func (t *Template) render(scope map[string]any, m *meter) (any, error) {
	if t.Single() {
		r := t.parts[0].ref
		if err := m.tick(); err != nil {
			return nil, err
		}
		v, err := ref.Resolve(scope, r.Path)
		if err != nil {
			return nil, &RenderError{Ref: r, Err: err}
		}
		if err := m.addValue(v); err != nil {
			return nil, err
		}
		return v, nil
	}
	return t.renderString(scope, m, 2)
}

// RenderString is like Render but always returns a string: a Single
// template's value is formatted as it would be inside text.
func (t *Template) RenderString(scope map[string]any) (string, error) {
	return t.renderString(scope, nil, 0)
}

// RenderStringBounded is RenderString within b: it stops with a
// *SizeError as soon as the text passes b.MaxBytes, and with the context's
// cause once b.Ctx ends.
func (t *Template) RenderStringBounded(scope map[string]any, b *Bounds) (string, error) {
	return t.renderString(scope, newMeter(b), 0)
}

// renderString renders the text; extra is what the text costs m beyond
// its bytes (2 for the quotes of a JSON string).
func (t *Template) renderString(scope map[string]any, m *meter, extra int64) (string, error) {
	if len(t.parts) == 1 && !t.parts[0].isRef {
		return t.parts[0].text, m.add(int64(len(t.parts[0].text)) + extra)
	}
	if err := m.add(int64(t.litSize) + extra); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(t.litSize + 16*len(t.refs))
	for _, p := range t.parts {
		if !p.isRef {
			b.WriteString(p.text)
			continue
		}
		if err := m.tick(); err != nil {
			return "", err
		}
		v, err := ref.Resolve(scope, p.ref.Path)
		if err != nil {
			return "", &RenderError{Ref: p.ref, Err: err}
		}
		if s, ok := v.(string); ok {
			// counted before it is copied
			if err := m.add(int64(len(s))); err != nil {
				return "", err
			}
			b.WriteString(s)
			continue
		}
		// a value's text is at least about half its measure: one past
		// twice the room is refused before its text is made.
		if room := m.room(); room >= 0 {
			if limit := 2*room + 16; value.JSONSize(v, limit) > limit {
				return "", &SizeError{Max: m.b.MaxBytes}
			}
		}
		before := b.Len()
		if err := writeValue(&b, v); err != nil {
			return "", &RenderError{Ref: p.ref, Err: err}
		}
		if err := m.add(int64(b.Len() - before)); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// writeValue appends v as it appears inside rendered text.
func writeValue(b *strings.Builder, v any) error {
	var buf [32]byte
	switch x := v.(type) {
	case string:
		b.WriteString(x)
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case float64:
		b.Write(appendFloat(buf[:0], x, 64))
	case float32:
		b.Write(appendFloat(buf[:0], float64(x), 32))
	case int:
		b.Write(strconv.AppendInt(buf[:0], int64(x), 10))
	case int64:
		b.Write(strconv.AppendInt(buf[:0], x, 10))
	case int32:
		b.Write(strconv.AppendInt(buf[:0], int64(x), 10))
	case uint64:
		b.Write(strconv.AppendUint(buf[:0], x, 10))
	case json.Number:
		b.WriteString(x.String())
	default:
		return writeJSON(b, v)
	}
	return nil
}

// appendFloat formats f the way encoding/json does (no exponent between
// 1e-6 and 1e21); NaN and infinities, which JSON cannot carry, are written
// as NaN, +Inf and -Inf.
func appendFloat(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.AppendFloat(dst, f, 'g', -1, bits)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// writeJSON appends v as compact JSON with sorted object keys and without
// HTML escaping.
func writeJSON(b *strings.Builder, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("cannot render %s as JSON: %w", ref.TypeName(v), err)
	}
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return nil
}
