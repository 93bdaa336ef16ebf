package temporal

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
)

// lossyBeats is lossy whose lost activities hand the workflow the last
// heartbeat details they recorded, as the server does with a heartbeat
// timeout: what an attempt's beat sent (Activities.record) before its
// worker was lost, once each, after the activity of a type in lose did its
// work.
func lossyBeats(t *testing.T, p *project.Project, lose ...string) *harness {
	return lossyAt(t, p, nil, nil, lose...)
}

// lossyAt is lossyBeats whose lost activities hand the workflow the
// details pick chooses among those their beats sent (nil: the last), as
// when the worker was lost then; seen, when set, is handed each.
func lossyAt(t *testing.T, p *project.Project, pick func([]lostWork) (lostWork, bool), seen func(lostWork), lose ...string) *harness {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	fs := NewFlows()
	fs.Add(p)
	var mu sync.Mutex
	if pick == nil {
		pick = func(ws []lostWork) (lostWork, bool) {
			if len(ws) == 0 {
				return lostWork{}, false
			}
			return ws[len(ws)-1], true
		}
	}
	beats := map[string][]lostWork{} // activity id → the details it sent
	ran := map[string]int{}
	a := &Activities{Flows: fs, Heartbeat: time.Hour, record: func(ctx context.Context, w lostWork) {
		mu.Lock()
		id := activity.GetInfo(ctx).ActivityID
		beats[id] = append(beats[id], w)
		mu.Unlock()
		if seen != nil {
			seen(w)
		}
		sendBeat(ctx, w)
	}}
	RegisterWorkflow(env, &Workflow{Flows: fs})
	env.RegisterDynamicActivity(func(ctx context.Context, args converter.EncodedValues) (*attemptOut, error) {
		info := activity.GetInfo(ctx)
		out, err := a.Run(ctx, args)
		mu.Lock()
		ran[info.ActivityType.Name]++
		first := ran[info.ActivityType.Name] == 1
		w, beat := pick(beats[info.ActivityID])
		mu.Unlock()
		for _, l := range lose {
			if l == info.ActivityType.Name && first {
				if !beat {
					return nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil)
				}
				return nil, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil, w)
			}
		}
		return out, err
	}, activity.DynamicRegisterOptions{})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-1"})
	return &harness{t: t, env: env, p: p}
}

// TestSagaLostCallTakenBack: the worker of take's attempt is lost after
// its charge returned; the charge is not safe to repeat and has no check,
// so the step waits for a person (unknown), who rejects it: the run fails
// and its saga takes the charge back (refund, with the charge's key
// extended), known from the lost activity's heartbeat. Without the
// heartbeat's details (lossy) nothing is taken back.
func TestSagaLostCallTakenBack(t *testing.T) {
	for _, beats := range []bool{true, false} {
		l := newLedger()
		p := load(t, sagaFlow, sagaTools(l, true)...)
		var h *harness
		if beats {
			h = lossyBeats(t, p, "tool:take")
		} else {
			h, _ = lossy(t, p, "tool:take")
		}
		var reject *updated
		h.env.RegisterDelayedCallback(func() {
			var pend []Pending
			h.query(QueryPending, &pend)
			if len(pend) != 1 || pend[0].Step != "take" || pend[0].Kind != "unknown" || !strings.Contains(pend[0].Error, "lost") {
				t.Errorf("beats %v: pending %+v", beats, pend)
			}
			reject = h.update(Decision{Step: "take", Action: ActionReject, By: "ana"})
		}, time.Minute)
		st := h.run(map[string]any{})
		if reject == nil || !reject.done || reject.err != nil {
			t.Errorf("beats %v: reject %+v", beats, reject)
		}
		if st.Status != "failed" || l.count("charge") != 1 {
			t.Fatalf("beats %v: run %s, charge made %d times (want once: lost, never again)", beats, st.Status, l.count("charge"))
		}
		got := l.keys("refund")
		switch {
		case beats && (len(got) != 1 || got[0] != "run-1/take/1/compensate"):
			t.Errorf("refund calls %v, want [run-1/take/1/compensate]: the lost call's heartbeat reported it", got)
		case !beats && len(got) != 0:
			t.Errorf("refund calls %v without heartbeat details, want none (nothing reported)", got)
		}
	}
}

// planLostFlow: a plan step holds stock, then charges; neither tool is
// safe to repeat.
const planLostFlow = `name: planlost
steps:
  - id: pay
    type: plan
    model: m
    goal: "hold a1 and charge 5"
    tools: [reserve, charge]
    max_steps: 3
`

const planLostScript = `replies:
  - step: pay
    decision: plan
    plan:
      goal: hold and charge
      steps:
        - {id: hold, tool: reserve, args: {sku: a1}}
        - {id: take, tool: charge, args: {amount: 5, after: {"$ref": "hold"}}}
`

// TestLostPlanContinues: the worker of a plan step's attempt is lost while
// its second plan step's call (charge) is in flight, the first (reserve)
// having succeeded: what its heartbeats carried says so. Its tools are not
// safe to repeat, so the step waits for a person, told which call was in
// flight; approved, the step continues its plan: the planner is not asked
// again (the script has one plan), reserve is not made again, and charge
// is made again with the key it had.
func TestLostPlanContinues(t *testing.T) {
	l := newLedger()
	h := lostPlanHarness(t, l, false, func(t tool.Tool) tool.Tool { return t })
	var approve *updated
	h.env.RegisterDelayedCallback(func() {
		var pend []Pending
		h.query(QueryPending, &pend)
		if len(pend) != 1 || pend[0].Step != "pay" || pend[0].Kind != "unknown" || !strings.Contains(pend[0].Error, "plan step take of plan 1 (tool charge") || !strings.Contains(pend[0].Error, "1 plan steps succeeded") {
			t.Errorf("pending %+v", pend)
		}
		approve = h.update(Decision{Step: "pay", Action: ActionApprove, By: "ana"})
	}, time.Minute)
	st := h.run(map[string]any{})
	if approve == nil || !approve.done || approve.err != nil {
		t.Errorf("approve: %+v", approve)
	}
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := l.keys("reserve"); len(got) != 1 {
		t.Errorf("reserve calls %v: want one, kept when the plan continued", got)
	}
	if got := l.keys("charge"); len(got) != 2 || got[0] != got[1] || !strings.HasPrefix(got[0], "run-1/pay/1/") {
		t.Errorf("charge calls %v: want the lost call made again with its key", got)
	}
	out := output(t, st, "pay")
	if res, _ := out["result"].(map[string]any); res == nil || res["tool"] != "charge" {
		t.Errorf("pay output %v", out)
	}
}

// lostPlanHarness runs planLostFlow (its tools idempotent or not) with its worker lost while charge (as
// wrap makes it, from the ledger's) is in flight: the first charge returns
// only once a heartbeat said it was in flight, and the workflow is handed
// that heartbeat's details.
func lostPlanHarness(t *testing.T, l *ledger, idempotent bool, wrap func(tool.Tool) tool.Tool) *harness {
	inFlight := make(chan struct{})
	var once sync.Once
	charge := l.tool("charge", idempotent)
	blocking := tool.Func(charge.Spec(), func(ctx context.Context, args any) (any, error) {
		select { // the first charge returns once a heartbeat said it is in flight
		case <-inFlight:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return charge.Call(ctx, args)
	})
	p := loadAgent(t, planLostFlow, planLostScript, l.tool("reserve", idempotent), wrap(blocking))
	midCharge := func(w lostWork) bool { return len(w.InFlight) == 1 && w.InFlight[0].PlanStep == "take" }
	return lossyAt(t, p, func(ws []lostWork) (lostWork, bool) {
		for k := len(ws) - 1; k >= 0; k-- {
			if midCharge(ws[k]) {
				return ws[k], true
			}
		}
		return lostWork{}, false
	}, func(w lostWork) {
		if midCharge(w) {
			once.Do(func() { close(inFlight) })
		}
	}, "plan:pay")
}

// TestLostPlanCheck: as TestLostPlanContinues, but charge declares a
// check:, asked with the call's key before a person: it finds the charge
// took effect, so the plan step joins the succeeded ones with the check's
// output and the plan goes on at once: nothing is made again, nobody asked.
func TestLostPlanCheck(t *testing.T) {
	l := newLedger()
	asked := 0
	h := lostPlanHarness(t, l, false, func(c tool.Tool) tool.Tool {
		return tool.WithCheck(c, func(_ context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			asked++
			for _, k := range l.calls["charge"] {
				if k == req.IdempotencyKey {
					return tool.CheckResult{Happened: true, Output: map[string]any{"found": k}}, nil
				}
			}
			return tool.CheckResult{}, nil
		})
	})
	st := h.run(map[string]any{})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if asked != 1 || l.count("charge") != 1 || l.count("reserve") != 1 {
		t.Errorf("check asked %d times, charge made %d, reserve %d: want once each", asked, l.count("charge"), l.count("reserve"))
	}
	out := output(t, st, "pay")
	if res, _ := out["result"].(map[string]any); res == nil || res["found"] != "run-1/pay/1/plan1/take" {
		t.Errorf("pay output %v: want the check's output as the charge's", out)
	}
}

// TestLostPlanRepeatable: as TestLostPlanContinues, with tools safe to
// repeat: nobody is asked; the plan goes on at once, reserve not made
// again, charge made again with its key.
func TestLostPlanRepeatable(t *testing.T) {
	l := newLedger()
	h := lostPlanHarness(t, l, true, func(t tool.Tool) tool.Tool { return t })
	st := h.run(map[string]any{})
	if st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := l.keys("reserve"); len(got) != 1 {
		t.Errorf("reserve calls %v: want one, kept when the plan continued", got)
	}
	if got := l.keys("charge"); len(got) != 2 || got[0] != got[1] || got[0] != "run-1/pay/1/plan1/take" {
		t.Errorf("charge calls %v: want the lost call made again with its key", got)
	}
}
