package temporal

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/reinhq/rein/tool"
)

// heldFlow: lookup's output contradicts its premise while each, on
// another branch, runs its items one at a time.
const heldFlow = `name: held
concurrency: 2
steps:
  - id: lookup
    tool: lookup
    args: {region: ""}
    premise: {id: region-known, claim: "the registry knows the region", check: 'output.args.region != ""'}
  - id: each
    tool: item
    for_each: input.ids
    concurrency: 1
    args: {id: "{item}"}
    requires: []
`

// gated is t whose first call says it began (began closed) and then
// waits until open is closed: a unit in flight when the premise fails,
// which settles after the run is held.
func gated(t tool.Tool, began chan<- struct{}, open <-chan struct{}) tool.Tool {
	var once sync.Once
	return tool.Func(t.Spec(), func(ctx context.Context, args any) (any, error) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(began)
			select {
			case <-open:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return t.Call(ctx, args)
	})
}

// after is t called once begun is closed.
func after(t tool.Tool, begun <-chan struct{}) tool.Tool {
	return tool.Func(t.Spec(), func(ctx context.Context, args any) (any, error) {
		select {
		case <-begun:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return t.Call(ctx, args)
	})
}

// openAfter closes open once the workflow took the result of an
// activity of type name (it is processed before any later result); the
// function it returns counts the activities of a type that completed.
func openAfter(h *harness, name string, open chan<- struct{}) func(string) int {
	var (
		once sync.Once
		mu   sync.Mutex
		done = map[string]int{}
	)
	h.env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		mu.Lock()
		done[info.ActivityType.Name]++
		mu.Unlock()
		if info.ActivityType.Name == name {
			once.Do(func() { close(open) })
		}
	})
	return func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return done[name]
	}
}

// TestPremiseHoldsForEach: a for_each step in flight starts no further
// item while a premise on another branch waits; settled, its items go on
// and the run succeeds; rejected, none starts again, the step ends
// failed (cancelled, as a local run's) and the run fails with the
// premise's rejection.
func TestPremiseHoldsForEach(t *testing.T) {
	for _, reject := range []bool{false, true} {
		t.Run(map[bool]string{false: "settled", true: "rejected"}[reject], func(t *testing.T) {
			l := newLedger()
			// the first item is in flight when lookup's premise fails, and
			// settles once the workflow took lookup's failure.
			began, open := make(chan struct{}), make(chan struct{})
			p := load(t, heldFlow, after(l.tool("lookup", true), began), gated(l.tool("item", true), began, open))
			h := newHarness(t, p)
			openAfter(h, "tool:lookup", open)
			var decided *updated
			h.env.RegisterDelayedCallback(func() {
				wantWaiting(t, h)
				var pend []Pending
				h.query(QueryPending, &pend)
				if len(pend) != 1 || pend[0].Step != "lookup" || pend[0].Kind != "premise" {
					t.Errorf("pending %+v, want lookup waiting on its premise", pend)
				}
				if n := l.count("item"); n != 1 {
					t.Errorf("items called %d times while the premise waits, want 1 (the one in flight)", n)
				}
				d := Decision{Step: "lookup", Action: ActionSettle, Output: json.RawMessage(`{"args": {"region": "eu"}}`), By: "ana"}
				if reject {
					d = Decision{Step: "lookup", Action: ActionReject, By: "ana", Comment: "the region is unknown"}
				}
				decided = h.update(d)
			}, time.Minute)
			st := h.run(map[string]any{"ids": []any{"a", "b", "c", "d"}})
			if decided == nil || !decided.done || decided.err != nil {
				t.Fatalf("decision: %+v", decided)
			}
			if !reject {
				if st.Status != "succeeded" || l.count("item") != 4 || l.count("lookup") != 1 {
					t.Fatalf("run %s %+v; items %d, lookup %d", st.Status, st.Error, l.count("item"), l.count("lookup"))
				}
				return
			}
			if st.Status != "failed" || st.Error == nil || st.Error.Step != "lookup" || l.count("item") != 1 {
				t.Fatalf("run %s %+v; items %d, want failed on lookup with 1 item", st.Status, st.Error, l.count("item"))
			}
			if s := stepOf(t, st, "each"); s.Status != "failed" || s.Error != "cancelled: the run stopped because step lookup failed" {
				t.Errorf("each: %+v, want failed, cancelled by the rejected premise", s)
			}
		})
	}
}

const heldAgentFlow = `name: heldagent
concurrency: 2
steps:
  - id: lookup
    tool: lookup
    args: {region: ""}
    premise: {id: region-known, claim: "the registry knows the region", check: 'output.args.region != ""'}
  - id: agent
    type: agent
    model: m
    instructions: Fetch twice.
    prompt_template: go
    tools: {fetch: }
    requires: []
`

const heldAgentScript = `replies:
  - {step: agent, decision: agent, turn: 1, tool_calls: [{name: fetch, args: {n: 1}}]}
  - {step: agent, decision: agent, turn: 2, tool_calls: [{name: fetch, args: {n: 2}}]}
  - {step: agent, decision: agent, turn: 3, raw: "done"}
`

// TestPremiseHoldsAgent: an agent step in flight asks the model for no
// further turn while a premise on another branch waits (its call in
// flight finishes); settled, its turns go on and the run succeeds;
// rejected, it takes none, ends failed (cancelled), and the run fails.
func TestPremiseHoldsAgent(t *testing.T) {
	for _, reject := range []bool{false, true} {
		t.Run(map[bool]string{false: "settled", true: "rejected"}[reject], func(t *testing.T) {
			l := newLedger()
			began, open := make(chan struct{}), make(chan struct{})
			p := loadAgent(t, heldAgentFlow, heldAgentScript, after(l.tool("lookup", true), began), gated(l.tool("fetch", true), began, open))
			h := newHarness(t, p)
			done := openAfter(h, "tool:lookup", open)
			var decided *updated
			h.env.RegisterDelayedCallback(func() {
				wantWaiting(t, h)
				if f, turns := l.count("fetch"), done("agent:agent"); f != 1 || turns != 1 {
					t.Errorf("while the premise waits: %d calls of fetch, %d model turns; want 1 and 1 (no further turn)", f, turns)
				}
				d := Decision{Step: "lookup", Action: ActionSettle, Output: json.RawMessage(`{"args": {"region": "eu"}}`), By: "ana"}
				if reject {
					d = Decision{Step: "lookup", Action: ActionReject, By: "ana"}
				}
				decided = h.update(d)
			}, time.Minute)
			st := h.run(map[string]any{})
			if decided == nil || !decided.done || decided.err != nil {
				t.Fatalf("decision: %+v", decided)
			}
			if !reject {
				if st.Status != "succeeded" || l.count("fetch") != 2 || done("agent:agent") != 3 {
					t.Fatalf("run %s %+v; fetch %d, turns %d", st.Status, st.Error, l.count("fetch"), done("agent:agent"))
				}
				return
			}
			if st.Status != "failed" || st.Error == nil || st.Error.Step != "lookup" || l.count("fetch") != 1 || done("agent:agent") != 1 {
				t.Fatalf("run %s %+v; fetch %d, turns %d; want failed on lookup after 1 call and 1 turn", st.Status, st.Error, l.count("fetch"), done("agent:agent"))
			}
			if s := stepOf(t, st, "agent"); s.Status != "failed" || s.Error != "cancelled: the run stopped because step lookup failed" {
				t.Errorf("agent: %+v, want failed, cancelled by the rejected premise", s)
			}
		})
	}
}

const heldRepeatFlow = `name: heldrepeat
concurrency: 2
steps:
  - id: lookup
    tool: lookup
    args: {region: ""}
    premise: {id: region-known, claim: "the registry knows the region", check: 'output.args.region != ""'}
  - {id: ping, tool: ping, args: {}, repeat: {max: 3, until: 'output.n >= 3'}, requires: []}
`

// TestPremiseHoldsRepeat: a repeat step in flight starts no further round
// while a premise on another branch waits; settled, its rounds go on;
// rejected, it starts none and ends failed (cancelled).
func TestPremiseHoldsRepeat(t *testing.T) {
	for _, reject := range []bool{false, true} {
		t.Run(map[bool]string{false: "settled", true: "rejected"}[reject], func(t *testing.T) {
			l := newLedger()
			began, open := make(chan struct{}), make(chan struct{})
			p := load(t, heldRepeatFlow, after(l.tool("lookup", true), began), gated(l.tool("ping", true), began, open))
			h := newHarness(t, p)
			openAfter(h, "tool:lookup", open)
			var decided *updated
			h.env.RegisterDelayedCallback(func() {
				wantWaiting(t, h)
				if n := l.count("ping"); n != 1 {
					t.Errorf("rounds while the premise waits: %d, want 1 (the one in flight)", n)
				}
				d := Decision{Step: "lookup", Action: ActionSettle, Output: json.RawMessage(`{"args": {"region": "eu"}}`), By: "ana"}
				if reject {
					d = Decision{Step: "lookup", Action: ActionReject, By: "ana"}
				}
				decided = h.update(d)
			}, time.Minute)
			st := h.run(map[string]any{})
			if decided == nil || !decided.done || decided.err != nil {
				t.Fatalf("decision: %+v", decided)
			}
			if !reject {
				if st.Status != "succeeded" || l.count("ping") != 3 {
					t.Fatalf("run %s %+v; rounds %d, want 3", st.Status, st.Error, l.count("ping"))
				}
				return
			}
			if st.Status != "failed" || st.Error == nil || st.Error.Step != "lookup" || l.count("ping") != 1 {
				t.Fatalf("run %s %+v; rounds %d; want failed on lookup after 1 round", st.Status, st.Error, l.count("ping"))
			}
			if s := stepOf(t, st, "ping"); s.Status != "failed" || s.Error != "cancelled: the run stopped because step lookup failed" {
				t.Errorf("ping: %+v, want failed, cancelled by the rejected premise", s)
			}
		})
	}
}

// wantWaiting checks that the status query shows the run waiting while
// every step in flight is held by a premise.
func wantWaiting(t *testing.T, h *harness) {
	t.Helper()
	var st Status
	h.query(QueryStatus, &st)
	if st.Status != "waiting" {
		t.Errorf("status %q while the held steps wait on the premise, want waiting", st.Status)
	}
}
