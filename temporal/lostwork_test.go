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
)

// lossyBeats is lossy whose lost activities hand the workflow the last
// heartbeat details they recorded, as the server does with a heartbeat
// timeout: what an attempt's beat sent (Activities.record) before its
// worker was lost, once each, after the activity of a type in lose did its
// work.
func lossyBeats(t *testing.T, p *project.Project, lose ...string) *harness {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	fs := NewFlows()
	fs.Add(p)
	var mu sync.Mutex
	last := map[string]lostWork{} // activity id → its last details
	seen := map[string]int{}
	a := &Activities{Flows: fs, Heartbeat: time.Hour, record: func(ctx context.Context, w lostWork) {
		mu.Lock()
		last[activity.GetInfo(ctx).ActivityID] = w
		mu.Unlock()
		sendBeat(ctx, w)
	}}
	RegisterWorkflow(env, &Workflow{Flows: fs})
	env.RegisterDynamicActivity(func(ctx context.Context, args converter.EncodedValues) (*attemptOut, error) {
		info := activity.GetInfo(ctx)
		out, err := a.Run(ctx, args)
		mu.Lock()
		seen[info.ActivityType.Name]++
		first := seen[info.ActivityType.Name] == 1
		w, beat := last[info.ActivityID]
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
