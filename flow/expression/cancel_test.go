package expression_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/reinhq/rein/flow/expression"
)

// TestEvalStopsOnCancel checks that a program whose nested loops would run
// for hours stops soon after its context ends, with the context's cause.
func TestEvalStopsOnCancel(t *testing.T) {
	t.Parallel()
	items := make([]any, 5000)
	for i := range items {
		items[i] = float64(i)
	}
	env := map[string]any{"input": map[string]any{"items": items}}
	// 5000^3 = 1.25e11 predicate calls: hours on any machine.
	p := expression.MustCompile("all(input.items, {all(input.items, {all(input.items, {# >= 0})})})")
	cause := errors.New("budget ran out")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 200*time.Millisecond, cause)
	defer cancel()
	start := time.Now()
	_, err := p.EvalContext(ctx, env)
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the context's cause", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stopped after %s", d)
	}
	// An ended context stops a program before it starts.
	if _, err := expression.MustCompile("1 == 1").EvalContext(ctx, env); !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the cause", err)
	}
}

// TestEvalContextResults checks that wrapping predicates changes no result.
func TestEvalContextResults(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := map[string]any{"xs": []any{1.0, 2.0, 3.0}, "rein_ctx": "mine"}
	for src, want := range map[string]any{
		"filter(xs, # > 1)":                              []any{2.0, 3.0},
		"map(xs, # * 2)":                                 []any{2.0, 4.0, 6.0},
		"count(xs, # > 1)":                               2,
		"any(xs, {all(xs, {# > 0}) && # == 3})":          true,
		"none(xs, # > 5) && one(xs, # == 2)":             true,
		"rein_ctx":                                       "mine",
		"len(filter(xs, {# > 1 && rein_ctx == 'mine'}))": 2,
	} {
		got, err := expression.MustCompile(src).EvalValueContext(ctx, env)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if g, w := fmtv(got), fmtv(want); g != w {
			t.Errorf("%s = %s, want %s", src, g, w)
		}
	}
}

func fmtv(v any) string { return fmt.Sprintf("%v", v) }
