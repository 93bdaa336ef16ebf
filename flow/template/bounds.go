package template

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/value"
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
	return m.add(value.JSONSize(v, room+1))
}
