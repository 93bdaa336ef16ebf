package template_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow/template"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestBoundsStopEarly renders 3,000 placeholders over a 1 MB output (3 GB
// rendered in full) within a 1 MiB bound: each form stops with a
// *SizeError having allocated about the bound, not the whole.
func TestBoundsStopEarly(t *testing.T) {
	big := strings.Repeat("x", 1_000_000)
	obj := map[string]any{"text": big, "n": 1.0}
	scope := map[string]any{"big": big, "obj": obj}
	text := strings.Repeat("{big} ", 3000)
	objText := strings.Repeat("{obj} ", 3000)
	list := make([]any, 3000)
	for i := range list {
		list[i] = "{big}"
	}
	b := &template.Bounds{MaxBytes: 1 << 20}
	for name, render := range map[string]func() error{
		"text": func() error {
			_, err := template.MustParse(text).RenderStringBounded(scope, b)
			return err
		},
		"objects in text": func() error {
			_, err := template.MustParse(objText).RenderStringBounded(scope, b)
			return err
		},
		"args": func() error {
			v, errs := template.ParseValue(map[string]any{"to": list})
			if errs != nil {
				t.Fatal(errs)
			}
			_, err := v.RenderBounded(scope, b)
			return err
		},
		"object args": func() error {
			v, _ := template.ParseValue([]any{"{obj}", "{obj}", "{obj}"})
			_, err := v.RenderBounded(scope, b)
			return err
		},
	} {
		var err error
		n := allocated(func() { err = render() })
		var se *template.SizeError
		if !errors.As(err, &se) || se.Max != 1<<20 {
			t.Errorf("%s: err = %v, want a *SizeError", name, err)
		}
		if n > 16<<20 {
			t.Errorf("%s: allocated %d bytes to find out", name, n)
		}
	}
	// Within the bound, everything renders as without bounds.
	v, _ := template.ParseValue(map[string]any{"a": "{big}", "b": []any{1.0, "x {obj.n}"}})
	got, err := v.RenderBounded(scope, &template.Bounds{MaxBytes: 2 << 20})
	if err != nil || got.(map[string]any)["a"] != big || got.(map[string]any)["b"].([]any)[1] != "x 1" {
		t.Fatalf("RenderBounded = %v", err)
	}
}

// TestBoundsContext checks that an ended context stops a rendering.
func TestBoundsContext(t *testing.T) {
	t.Parallel()
	cause := errors.New("time is up")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	scope := map[string]any{"a": "x"}
	b := &template.Bounds{Ctx: ctx}
	if _, err := template.MustParse("{a} {a}").RenderStringBounded(scope, b); !errors.Is(err, cause) {
		t.Errorf("RenderStringBounded: %v", err)
	}
	v, _ := template.ParseValue(map[string]any{"k": "{a}"})
	if _, err := v.RenderBounded(scope, b); !errors.Is(err, cause) {
		t.Errorf("RenderBounded: %v", err)
	}
}
