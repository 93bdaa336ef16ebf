package workflowtool_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

var gatedCalls atomic.Int64

func init() {
	workflowtool.RegisterAdapter("test.gated", func(context.Context, map[string]any) (any, error) {
		gatedCalls.Add(1)
		return map[string]any{"ok": true}, nil
	})
}

// TestAdapterMeetsTheGate: a source step's adapter is a tool call. A rule
// of rein.yaml's or of the flow's policy: that names it refuses it, with
// what to do instead; the decision is journaled in the task, naming the
// rule, and the adapter is not called.
func TestAdapterMeetsTheGate(t *testing.T) {
	t.Parallel()
	const rules = "policy:\n  rules:\n    - {name: no-gated, tools: [test.gated], verdict: %s, reason: by hand only}\n"
	for _, tc := range []struct{ name, config, flow, verdict string }{
		{"rein.yaml", rules, "", "block"},
		{"flow", "", rules, "require_approval"},
	} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "rein.yaml"), strings.Replace(tc.config, "%s", tc.verdict, 1)+"tools: {}\n")
		writeFile(t, filepath.Join(dir, "flow.yaml"), "name: gated\nsteps:\n  - {id: s, adapter: test.gated, skill: get-it, requires: []}\n"+
			strings.Replace(tc.flow, "%s", tc.verdict, 1))
		st := openStore(t)
		w := newWorkflow(t, dir, st)
		task := mustDo(t, w, `{"action":"start","input":{}}`).TaskID
		_, e := do(t, w, `{"action":"submit_from_source","task_id":"`+task+`","step_id":"s"}`)
		if e == nil || e.Type != fault.Policy || !strings.Contains(e.Message, tc.verdict+" on tool test.gated by rule no-gated: by hand only") ||
			!strings.Contains(e.Message, "(action submit)") {
			t.Fatalf("%s: error %+v, want the gate's refusal saying to submit instead", tc.name, e)
		}
		evs, err := st.Events(context.Background(), task, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		// the decision is in the call's one record (refused: failed, not
		// made), not in an event of its own.
		var journaled bool
		for _, ev := range evs {
			if ev.Kind == trace.GateDecision {
				t.Errorf("%s: event %d is a gate_decision event: an adapter's call is its call record", tc.name, ev.Seq)
			}
			if c := ev.Call; ev.Kind == trace.CallRecorded && c != nil && c.StepID == "s" && c.Name == "test.gated" && c.Status == journal.CallFailed &&
				c.Outcome == "blocked" && len(c.Gate) == 1 && c.Gate[0].Verdict == tc.verdict && c.Gate[0].Why == "rule no-gated: by hand only" {
				journaled = true
			}
		}
		if !journaled {
			t.Errorf("%s: no call record of the adapter's call with the gate's decision in the task's journal", tc.name)
		}
	}
	if n := gatedCalls.Load(); n != 0 {
		t.Errorf("the adapter was called %d times past the gate", n)
	}
}

var unjournaledCalls atomic.Int64

func init() {
	workflowtool.RegisterAdapter("test.unjournaled", func(context.Context, map[string]any) (any, error) {
		unjournaledCalls.Add(1)
		return map[string]any{"ok": true}, nil
	})
}

// decisionFailStore fails every commit that journals a gate decision (a
// call record carrying one), as a
// store that went away between the gate and the call would.
type decisionFailStore struct{ store.Store }

func (s decisionFailStore) Commit(ctx context.Context, t *store.Transition) error {
	for _, ev := range t.Events {
		if ev.Kind == trace.CallRecorded && ev.Call != nil && len(ev.Call.Gate) > 0 {
			return errors.New("disk I/O error")
		}
	}
	return s.Store.Commit(ctx, t)
}

// TestAdapterIsNotCalledWithoutItsDecisionOnRecord: when the gate's
// decision to let an adapter through cannot be journaled, the adapter is
// not called and the agent gets a transient error saying so.
func TestAdapterIsNotCalledWithoutItsDecisionOnRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "rein.yaml"), "policy:\n  rules:\n    - {name: other, tools: [something.else], verdict: block, reason: not this one}\ntools: {}\n")
	writeFile(t, filepath.Join(dir, "flow.yaml"), "name: unjournaled\nsteps:\n  - {id: s, adapter: test.unjournaled, skill: get-it, requires: []}\n")
	w := newWorkflow(t, dir, decisionFailStore{openStore(t)})
	task := mustDo(t, w, `{"action":"start","input":{}}`).TaskID
	_, e := do(t, w, `{"action":"submit_from_source","task_id":"`+task+`","step_id":"s"}`)
	if e == nil || e.Type != fault.Transient || !e.Retryable || !strings.Contains(e.Message, "allow decision could not be journaled") ||
		!strings.Contains(e.Message, "disk I/O error") {
		t.Fatalf("error %+v, want a transient error saying the decision could not be journaled", e)
	}
	if n := unjournaledCalls.Load(); n != 0 {
		t.Errorf("the adapter was called %d times without its gate decision on record", n)
	}
}
