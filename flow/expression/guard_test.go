package expression_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/flow/expression"
)

// TestGuardedResults checks that the guarded builtins and operators give
// what expr's own give.
func TestGuardedResults(t *testing.T) {
	t.Parallel()
	env := map[string]any{"s": "a-b-c", "p": "^a.b", "xs": []any{"x", "y"}, "n": 2.0}
	for src, want := range map[string]any{
		`s matches "b-c$"`:        true,
		`s matches p`:             true,
		`"zz" matches p`:          false,
		`replace(s, "-", "+")`:    "a+b+c",
		`replace(s, "-", "", 1)`:  "ab-c",
		`replace(s, "", ".")`:     ".a.-.b.-.c.",
		`join(xs, ", ")`:          "x, y",
		`join(split(s, "-"))`:     "abc",
		`s + "!" + string(n + 1)`: "a-b-c!3",
		`sum(map(xs, len(#)))`:    2,
		`upper(trim(" a "))`:      "A",
	} {
		got, err := expression.MustCompile(src).EvalValueContext(context.Background(), env)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if fmtv(got) != fmtv(want) {
			t.Errorf("%s = %v, want %v", src, got, want)
		}
	}
	if _, err := expression.Compile(`s matches "("`); err == nil {
		t.Error("a bad literal pattern compiled")
	}
}

// TestGuardedOperandsAreBounded checks that an operand larger than
// MaxOperandBytes, or a replace or join that would make more, is an error
// located at the operand (or at replace or join), found before the work is done: the 36 MB
// inputs that took seconds.
func TestGuardedOperandsAreBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("abcdefgh ", 4<<20)
	items := make([]any, 1<<20)
	for i := range items {
		items[i] = float64(i)
	}
	env := map[string]any{"input": map[string]any{"text": big, "items": items}, "s": strings.Repeat("ab", 1000)}
	for src, at := range map[string]int{
		`len(string(input)) > 0`:                                   11,
		`input.text matches "a.*z"`:                                6,
		`sum(input.items) > 0`:                                     10,
		`len(split(input.text, "")) > 0`:                           16,
		`len(input.text + "x") > 0`:                                10,
		`len(replace(s, "", s)) > 0`:                               4,
		`len(join(split(s, ""), s)) > 0`:                           4,
		`"x" matches replace(s, "", "aa")`:                         12,
		`len(replace(replace(s, "", s[:99]), "", s[:99])) > 9`:     4,
		`len(lower(input.text)) > 0 || len(upper(input.text)) > 0`: 16,
	} {
		start := time.Now()
		_, err := expression.MustCompile(src).EvalContext(context.Background(), env)
		var e *expression.Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, "1048576") && !strings.Contains(e.Msg, "4096") {
			t.Errorf("%s: err = %v, want the bound", src, err)
			continue
		}
		if e.Offset != at {
			t.Errorf("%s: error at offset %d, want %d: %v", src, e.Offset, at, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: refused after %s", src, d)
		}
	}
}

// TestGuardedChainStopsOnCancel checks that a chain of bounded operations
// that takes seconds (60 splits of 900 KB) stops soon after its context
// ends, with the context's cause.
func TestGuardedChainStopsOnCancel(t *testing.T) {
	t.Parallel()
	env := map[string]any{"t": strings.Repeat("abcdefgh ", 100_000)}
	const n = 60
	src := "len(split(t,''))" + strings.Repeat("+len(split(t,''))", n-1) + " > 0"
	// one split, timed in the same run, so that the bound below scales
	// with the machine's load: uncancelled, the chain takes n of them.
	start := time.Now()
	if _, err := expression.MustCompile("len(split(t,'')) > 0").EvalContext(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	one := time.Since(start)
	cause := errors.New("step timed out")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 50*time.Millisecond, cause)
	defer cancel()
	start = time.Now()
	_, err := expression.MustCompile(src).EvalContext(ctx, env)
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the cause", err)
	}
	if d := time.Since(start); d > 50*time.Millisecond+n/3*one {
		t.Fatalf("stopped after %s; one split takes %s, the whole chain about %s", d, one, n*one)
	}
}
