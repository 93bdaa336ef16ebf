package template

import (
	"errors"
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
