package template

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"", "plain", "{a}", "{ a.b[0] }", "x {a} y {b.c}", "{{", "}}", "{{a}}", "{{{a}}}",
	"{", "}", "{}", "{ }", "{a", "a}", "{a..b}", "{1}", "{a[}", "{a[0]", "{steps.send-email.status}",
	"héllo {a} wörld", "{\t a \t}", "{a}{b}{c}",
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset >= len(s) {
				t.Fatalf("Parse(%q): bad error %#v", s, err)
			}
			return
		}
		for _, r := range tm.Refs() {
			if r.Offset < 0 || r.Offset >= len(s) || s[r.Offset] != '{' {
				t.Fatalf("Parse(%q): ref %v has bad offset %d", s, r.Path, r.Offset)
			}
		}
		if tm.IsLiteral() {
			want := strings.ReplaceAll(strings.ReplaceAll(s, "{{", "{"), "}}", "}")
			got, err := tm.Render(nil)
			if err != nil || got != want {
				t.Fatalf("literal %q rendered to %#v, %v; want %q", s, got, err, want)
			}
		}
	})
}

func FuzzRender(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "value", uint16(8))
	}
	f.Fuzz(func(t *testing.T, s, val string, limit uint16) {
		tm, err := Parse(s)
		if err != nil {
			return
		}
		sc := map[string]any{
			"a": val, "b": map[string]any{"c": 1.5, "d": []any{val, nil, true}},
			"steps": map[string]any{"send-email": map[string]any{"status": "done"}},
		}
		out, err := tm.Render(sc)
		if err != nil {
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("Render(%q): error %v is not a *RenderError", s, err)
			}
			return
		}
		if !tm.Single() {
			if _, ok := out.(string); !ok {
				t.Fatalf("Render(%q) = %T, want string", s, out)
			}
		}
		// Bounded text rendering counts exactly: it succeeds when the text
		// fits and otherwise fails with a *SizeError.
		want, _ := tm.RenderString(sc)
		max := int64(limit) + 1
		got, err := tm.RenderStringBounded(sc, &Bounds{MaxBytes: max})
		var se *SizeError
		switch fits := int64(len(want)) <= max; {
		case fits && (err != nil || got != want):
			t.Fatalf("RenderStringBounded(%q, %d) = %q, %v; want %q", s, max, got, err, want)
		case !fits && !errors.As(err, &se):
			t.Fatalf("RenderStringBounded(%q, %d) = %q, %v; want a *SizeError (text is %d bytes)", s, max, got, err, len(want))
		}
	})
}

// FuzzRenderBoundedMemory: a bounded rendering of many placeholders over
// a large value (the approval message of 1,000 placeholders that took
// 6.8 GB) allocates a small multiple of its bound, not of what the text
// would be: the bytes are counted before they are made.
func FuzzRenderBoundedMemory(f *testing.F) {
	f.Add(1000, 100_000, uint16(4096), false)
	f.Add(3000, 20_000, uint16(100), true)
	f.Add(2, 1, uint16(0), true)
	f.Add(2, 200_000, uint16(100), true)
	f.Fuzz(func(t *testing.T, refs, size int, limit uint16, object bool) {
		if refs < 1 || refs > 3000 || size < 0 || size > 200_000 {
			return
		}
		var v any = strings.Repeat("x", size)
		if object {
			v = map[string]any{"k": v, "n": []any{1.5, true, nil}}
		}
		tm := MustParse(strings.Repeat("{a} ", refs))
		max := int64(limit) + 1
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, err := tm.RenderStringBounded(map[string]any{"a": v}, &Bounds{MaxBytes: max})
		runtime.ReadMemStats(&after)
		var se *SizeError
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("RenderStringBounded: %v", err)
		}
		if err == nil && int64(len(out)) > max {
			t.Fatalf("rendered %d bytes over a bound of %d", len(out), max)
		}
		// the builder's first guess, the rendered text and one value's
		// encoding (a value past twice the room is refused unencoded),
		// with room for the allocator's rounding.
		budget := 64<<10 + 16*uint64(refs) + 16*uint64(max)
		if got := after.TotalAlloc - before.TotalAlloc; got > budget {
			t.Fatalf("%d placeholders of %d bytes within %d allocated %d bytes, more than %d", refs, size, max, got, budget)
		}
	})
}
