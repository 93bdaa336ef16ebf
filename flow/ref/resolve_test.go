package ref

import (
	"errors"
	"testing"
)

func testScope() map[string]any {
	return map[string]any{
		"extract_info": map[string]any{"name": "Ada", "years": 12.0},
		"input":        map[string]any{"items": []any{"x", map[string]any{"title": "t"}}},
		"flag":         true,
		"nothing":      nil,
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want any
	}{
		{"extract_info.name", "Ada"},
		{"extract_info.years", 12.0},
		{"input.items[0]", "x"},
		{"input.items[1].title", "t"},
		{"flag", true},
		{"nothing", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(testScope(), MustParse(tt.path))
			if err != nil {
				t.Fatalf("Resolve(%s): %v", tt.path, err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%s) = %#v, want %#v", tt.path, got, tt.want)
			}
		})
	}
}

func TestResolveMissing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		at   int
		msg  string
	}{
		{"extract_info.resume", 1, `field "resume" not found in extract_info (has: name, years)`},
		{"nope", 0, `name "nope" not found (has: extract_info, flag, input, nothing)`},
		{"input.items[3]", 2, `index 3 out of range in input.items (length 2)`},
		{"extract_info.name.x", 2, `cannot read field "x" of a string in extract_info.name`},
		{"nothing.x", 1, `cannot read field "x" of null in nothing`},
		{"input.items.x", 2, `cannot read field "x" of a list in input.items`},
		{"extract_info[0]", 1, `cannot index an object with [0] in extract_info`},
		{"flag[1]", 1, `cannot index a boolean with [1] in flag`},
		{"extract_info.years.x", 2, `cannot read field "x" of a number in extract_info.years`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			p := MustParse(tt.path)
			_, err := Resolve(testScope(), p)
			var me *MissingError
			if !errors.As(err, &me) {
				t.Fatalf("Resolve(%s) error = %v, want *MissingError", tt.path, err)
			}
			if me.At != tt.at || me.Error() != tt.msg || !me.Path.Equal(p) {
				t.Errorf("Resolve(%s) = {At:%d %q}, want {At:%d %q}", tt.path, me.At, me.Error(), tt.at, tt.msg)
			}
		})
	}
}

func TestResolveManyKeysTruncated(t *testing.T) {
	t.Parallel()
	m := map[string]any{}
	for _, c := range "abcdefghijklmnopqrstuvwxyz" {
		m[string(c)] = 1.0
	}
	_, err := Resolve(map[string]any{"m": m}, MustParse("m.zz"))
	want := `field "zz" not found in m (has: a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, … 6 more)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestResolveNoAlloc(t *testing.T) {
	scope := testScope()
	p := MustParse("input.items[1].title")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Resolve(scope, p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Resolve allocated %v times per run, want 0", allocs)
	}
}

func BenchmarkResolve(b *testing.B) {
	scope := testScope()
	p := MustParse("input.items[1].title")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(scope, p); err != nil {
			b.Fatal(err)
		}
	}
}
