package engine_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// checker fails the items whose x is in bad and doubles the others; backup
// records what it was called with.
func foreachTools(bad ...float64) (check, backup tool.Tool, calls func() []any) {
	var mu sync.Mutex
	var got []any
	check = goTool("check", func(_ context.Context, a map[string]any) (any, error) {
		for _, b := range bad {
			if a["x"] == b {
				return nil, fault.BusinessErr(errors.New("bad item"))
			}
		}
		return map[string]any{"v": a["x"].(float64) * 2}, nil
	})
	backup = goTool("backup", func(_ context.Context, a map[string]any) (any, error) {
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
		if a["x"] == 99.0 || a["item"] == 99.0 {
			return nil, fault.BusinessErr(errors.New("backup is down too"))
		}
		return map[string]any{"v": -1.0, "from": a}, nil
	})
	calls = func() []any {
		mu.Lock()
		defer mu.Unlock()
		return append([]any(nil), got...)
	}
	return check, backup, calls
}

func TestForEachFallbackPerItem(t *testing.T) {
	t.Parallel()
	check, backup, calls := foreachTools(2, 4)
	fx := newFixture(t, check, backup)
	res := fx.run(`
name: fe
steps:
  - id: c
    tool: check
    for_each: "input.xs"
    concurrency: 1
    args: {x: "{item}"}
    on_error: fallback
    fallback: {tool: backup, args: {item: "{item}", index: "{index}"}}
`, map[string]any{"xs": []any{1.0, 2.0, 3.0, 4.0}})
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "c", trace.StepFellBack, -1)
	want := []any{
		map[string]any{"v": 2.0},
		map[string]any{"v": -1.0, "from": map[string]any{"item": 2.0, "index": 1.0}},
		map[string]any{"v": 6.0},
		map[string]any{"v": -1.0, "from": map[string]any{"item": 4.0, "index": 3.0}},
	}
	if !reflect.DeepEqual(res.Outputs["c"], want) {
		t.Fatalf("output %v, want %v", res.Outputs["c"], want)
	}
	if len(calls()) != 2 {
		t.Fatalf("backup calls %v, want one per failed item", calls())
	}
	if e := res.Steps["c"].Error; e == nil || !strings.Contains(e.Message, "item 1: ") {
		t.Fatalf("the absorbed failure names the first failed item: %v", e)
	}
}

// A fallback tool without args gets the failed item's own args.
func TestForEachFallbackToolWithoutArgsGetsTheItem(t *testing.T) {
	t.Parallel()
	check, backup, calls := foreachTools(3)
	fx := newFixture(t, check, backup)
	res := fx.run(`
name: fe
steps:
  - {id: c, tool: check, for_each: "input.xs", args: {x: "{item}"}, on_error: fallback, fallback: {tool: backup}}
`, map[string]any{"xs": []any{3.0, 5.0}})
	wantStatus(t, res, trace.RunSucceeded)
	if got := calls(); !reflect.DeepEqual(got, []any{map[string]any{"x": 3.0}}) {
		t.Fatalf("backup got %v, want the item's args", got)
	}
	out, _ := res.Outputs["c"].([]any)
	if len(out) != 2 || !reflect.DeepEqual(out[1], map[string]any{"v": 10.0}) {
		t.Fatalf("output %v is not the list of items", res.Outputs["c"])
	}
}

func TestForEachSkipFillsTheSlot(t *testing.T) {
	t.Parallel()
	check, backup, _ := foreachTools(2)
	fx := newFixture(t, check, backup)
	res := fx.run(`
name: fe
steps:
  - {id: c, tool: check, for_each: "input.xs", args: {x: "{item}"}, on_error: skip, fallback_value: {v: 0}}
  - {id: v, tool: check, for_each: "input.xs", args: {x: "{item}"}, on_error: fallback, fallback_value: {v: 0}, requires: []}
`, map[string]any{"xs": []any{1.0, 2.0, 3.0}})
	wantStatus(t, res, trace.RunSucceeded)
	wantStep(t, res, "c", trace.StepDefaulted, -1)
	wantStep(t, res, "v", trace.StepFellBack, -1)
	want := []any{map[string]any{"v": 2.0}, map[string]any{"v": 0.0}, map[string]any{"v": 6.0}}
	for _, id := range []string{"c", "v"} {
		if !reflect.DeepEqual(res.Outputs[id], want) {
			t.Fatalf("%s output %v, want %v", id, res.Outputs[id], want)
		}
	}
}

// An item whose fallback fails too fails the step, with both errors.
func TestForEachFallbackFailureFailsTheStep(t *testing.T) {
	t.Parallel()
	check, backup, _ := foreachTools(99)
	fx := newFixture(t, check, backup)
	res := fx.run(`
name: fe
steps:
  - {id: c, tool: check, for_each: "input.xs", args: {x: "{item}"}, on_error: fallback, fallback: {tool: backup}}
`, map[string]any{"xs": []any{1.0, 99.0}})
	wantStatus(t, res, trace.RunFailed)
	wantErrorClass(t, res, fault.Business, "item 1: tool backup: backup is down too (after the item failed: tool check: bad item)")
}

// An item whose input cannot be rendered falls back alone.
func TestForEachItemRenderErrorFallsBackAlone(t *testing.T) {
	t.Parallel()
	check, backup, _ := foreachTools()
	fx := newFixture(t, check, backup)
	res := fx.run(`
name: fe
steps:
  - {id: c, tool: check, for_each: "input.xs", args: {x: "{item.n}"}, on_error: skip, fallback_value: {v: 0}}
`, map[string]any{"xs": []any{map[string]any{"n": 1.0}, map[string]any{}}})
	wantStatus(t, res, trace.RunSucceeded)
	want := []any{map[string]any{"v": 2.0}, map[string]any{"v": 0.0}}
	if !reflect.DeepEqual(res.Outputs["c"], want) {
		t.Fatalf("output %v, want %v", res.Outputs["c"], want)
	}
}
