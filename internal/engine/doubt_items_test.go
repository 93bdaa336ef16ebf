package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// The item-in-flight test: each calls look over three items, one at a
// time (in mode rounds: in three repeat rounds); look answers with its
// idempotency key and has no check. A child process runs the flow and
// dies by SIGKILL in item 1's call (round 2's). The parent
// resumes: by the one rule for a call in doubt (invoke.Resolve), a tool
// that is idempotent or reads at most is made again with the same key,
// unasked, whether or not its start was recorded.
const doubtItemsFlow = `name: doubt_items
steps:
  - {id: each, tool: look, for_each: "{input.items}", concurrency: 1, args: {n: "{item}"}}
`

// doubtRoundsFlow is the flow in mode rounds.
const doubtRoundsFlow = `name: doubt_rounds
steps:
  - {id: each, tool: look, args: {n: 1}, repeat: {until: "iteration >= 3", max: 3}}
`

// doubtPlainFlow is the flow in mode plain: one step, no loop.
const doubtPlainFlow = `name: doubt_plain
steps:
  - {id: each, tool: look, args: {n: 1}}
`

// doubtKill is the call each mode's child dies in.
var doubtKill = map[string]string{"idempotent": "each[1]/1", "read": "each[1]/1", "rounds": "each#2/1", "plain": "each/1"}

// doubtItemsEngine builds the flow's engine over dir and st, look
// declared as spec says; look appends its key (without the run id) to
// dir/calls and kills the process when its key is kill.
func doubtItemsEngine(t testing.TB, dir string, st store.Store, mode, kill string, clock engine.Clock) (*engine.Engine, *flow.Flow) {
	t.Helper()
	spec := doubtItemsSpecs[mode]
	spec.Name = "look"
	reg := &tool.Registry{}
	err := reg.Register(tool.Func(spec, func(ctx context.Context, _ any) (any, error) {
		info := tool.CallInfoFrom(ctx)
		key := strings.TrimPrefix(info.IdempotencyKey, info.RunID+"/")
		f, err := os.OpenFile(filepath.Join(dir, "calls"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = f.WriteString(key + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && key == kill {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return map[string]any{"key": key}, err
	}))
	if err != nil {
		t.Fatal(err)
	}
	src := doubtItemsFlow
	switch mode {
	case "rounds":
		src = doubtRoundsFlow
	case "plain":
		src = doubtPlainFlow
	}
	f, err := flow.Parse([]byte(src), "doubt_items.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	return engine.New(engine.Config{Tools: reg, Store: st, Clock: clock}), f
}

// doubtItemsSpecs: look as each case declares it.
var doubtItemsSpecs = map[string]tool.Spec{
	"idempotent": {Effect: tool.EffectExternal, Idempotent: true}, // its start is not recorded
	"read":       {Effect: tool.EffectRead},                       // its start is recorded: started, never settled
	"rounds":     {Effect: tool.EffectRead},
	"plain":      {Effect: tool.EffectRead},
}

// TestDoubtItemsChild is the child's body; it does nothing in a normal run.
func TestDoubtItemsChild(t *testing.T) {
	mode := os.Getenv("REIN_DOUBT_ITEMS_MODE")
	if mode == "" {
		t.Skip("the item-in-flight test's child process (run by TestItemInFlightRunsAgainWhenRepeatable)")
	}
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := doubtItemsEngine(t, dir, st, mode, doubtKill[mode], nil)
	_, err = e.Run(context.Background(), f, map[string]any{"items": []any{"a", "b", "c"}}, &engine.RunOptions{RunID: "di"})
	t.Fatalf("the child was meant to die in call %s, but its run returned (%v)", doubtKill[mode], err)
}

// TestItemInFlightRunsAgainWhenRepeatable: a for_each item caught in
// flight by a crash, its tool idempotent (no start recorded) or read-only
// (a start recorded, never settled) and without a check, runs again on
// resume with the same key, nobody asked; the items that settled are
// kept. So does a repeat round of a read-only tool (mode rounds), and a
// plain step of one (mode plain).
func TestItemInFlightRunsAgainWhenRepeatable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel()
	for _, mode := range []string{"idempotent", "read", "rounds", "plain"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir, st := killedChild(t, "TestDoubtItemsChild", "REIN_DOUBT_ITEMS_MODE="+mode)
			e, f := doubtItemsEngine(t, dir, st, mode, "", pastLease(t, st, "di"))
			res, err := e.Resume(ctx, f, "di")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != trace.RunSucceeded {
				t.Fatalf("after resume: %s, pending %+v (%+v); want succeeded, nobody asked", res.Status, res.Pending, res.Error)
			}
			want := []string{"each[0]/1", "each[1]/1", "each[1]/1", "each[2]/1"}
			switch mode {
			case "rounds", "plain":
				want = []string{"each#1/1", "each#2/1", "each#2/1", "each#3/1"}
				if mode == "plain" {
					want = []string{"each/1", "each/1"}
				}
				if got := res.Outputs["each"].(map[string]any)["key"]; got != want[len(want)-1] {
					t.Fatalf("each's output came from the call keyed %v, want %s", got, want[len(want)-1])
				}
			default:
				var got []any
				for _, v := range res.Outputs["each"].([]any) {
					got = append(got, v.(map[string]any)["key"])
				}
				if keys := []any{"each[0]/1", "each[1]/1", "each[2]/1"}; !slices.Equal(got, keys) {
					t.Fatalf("each's items came from the calls keyed %v, want %v", got, keys)
				}
			}
			if calls := readLines(t, filepath.Join(dir, "calls")); !slices.Equal(calls, want) {
				t.Fatalf("calls %v, want %v", calls, want)
			}
		})
	}
}
