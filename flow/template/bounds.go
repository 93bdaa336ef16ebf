package template

import (
	"context"
	"fmt"
	"math"
	"strconv"
)

// Bounds limit one rendering. A nil *Bounds means no limit.
type Bounds struct {
	// Ctx, when not nil, is checked every checkEvery placeholders;
	// rendering then stops with context.Cause(Ctx).
	Ctx context.Context
	// MaxBytes bounds the rendered text, or a rendered value tree's size as
	// JSON (about: strings count their bytes and quotes, not their
	// escapes). Zero means no bound. Rendering stops as soon as it passes
	// the bound, before it builds the rest, with a *SizeError.
	MaxBytes int64
}

// checkEvery is how many placeholders pass between context checks.
const checkEvery = 64

// SizeError reports a rendering that passed Bounds.MaxBytes.
type SizeError struct {
	Max int64
}

// Error says that the rendering passed the bound.
func (e *SizeError) Error() string {
	return fmt.Sprintf("the rendered input is more than %d bytes", e.Max)
}

// meter counts what one rendering produced against its Bounds.
type meter struct {
	b    *Bounds
	used int64
	refs int
}

func newMeter(b *Bounds) *meter {
	if b == nil || b.Ctx == nil && b.MaxBytes <= 0 {
		return nil
	}
	return &meter{b: b}
}

// add counts n more bytes.
func (m *meter) add(n int64) error {
	if m == nil {
		return nil
	}
	m.used += n
	if m.b.MaxBytes > 0 && m.used > m.b.MaxBytes {
		return &SizeError{Max: m.b.MaxBytes}
	}
	return nil
}

// room is how many bytes may still be added; -1 when unbounded.
func (m *meter) room() int64 {
	if m == nil || m.b.MaxBytes <= 0 {
		return -1
	}
	return max(m.b.MaxBytes-m.used, 0)
}

// tick counts a placeholder and checks the context every checkEvery.
func (m *meter) tick() error {
	if m == nil || m.b.Ctx == nil {
		return nil
	}
	if m.refs++; m.refs%checkEvery == 1 && m.b.Ctx.Err() != nil {
		return context.Cause(m.b.Ctx)
	}
	return nil
}

// addValue counts v's size as JSON, walking no further than the room left.
func (m *meter) addValue(v any) error {
	room := m.room()
	if room < 0 {
		return nil
	}
	return m.add(jsonSize(v, room+1))
}

// jsonSize returns about how many bytes v takes as JSON, or a number above
// limit as soon as it passes limit (so the walk is bounded by limit).
func jsonSize(v any, limit int64) int64 {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case string:
		return int64(len(x)) + 2
	case float64:
		return floatSize(x)
	case []any:
		n := int64(2)
		for _, e := range x {
			if n += jsonSize(e, limit-n) + 1; n > limit {
				return n
			}
		}
		return n
	case map[string]any:
		n := int64(2)
		for k, e := range x {
			if n += int64(len(k)) + 4 + jsonSize(e, limit-n); n > limit {
				return n
			}
		}
		return n
	}
	return 8
}

// floatSize is len(strconv.FormatFloat(x, 'g', -1, 64)), without the
// string: whole numbers below 1e6 (where 'g' writes plain digits) are
// counted digit by digit, others formatted into a buffer on the stack.
func floatSize(x float64) int64 {
	if a := math.Abs(x); a < 1e6 && a == math.Trunc(a) && !(x == 0 && math.Signbit(x)) {
		n := int64(1)
		if x < 0 {
			n++
		}
		for d := int64(a); d >= 10; d /= 10 {
			n++
		}
		return n
	}
	var buf [32]byte
	return int64(len(strconv.AppendFloat(buf[:0], x, 'g', -1, 64)))
}
