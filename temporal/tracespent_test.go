package temporal

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
)

const traceSpentScript = `replies:
  - {step: a, raw: "A", tokens: {in: 30, out: 10}}
  - {step: clerk, turn: 1, tool_calls: [{name: lookup, args: {order: "1"}}], tokens: {in: 5, out: 2}}
  - {step: clerk, turn: 2, raw: "found", tokens: {in: 7, out: 3}}
`

// TestTraceSpent: rein runs trace --temporal counts the tokens and model
// calls an llm step's activity reported (attemptOut.Spent), and an
// agent's from its session's turns, not twice from its units' reports.
// The history is the activities' real inputs and results, as the test
// suite ran them, laid out as a server records them (synthetic).
func TestTraceSpent(t *testing.T) {
	l := newLedger()
	p := loadAgent(t, strings.Replace(spendAgentFlow, "max_llm_calls: 2", "max_llm_calls: 10", 1), traceSpentScript, l.tool("lookup", true))
	h := newHarness(t, p)
	var (
		mu   sync.Mutex
		acts []synthAct
		at   = map[string]int{}
	)
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var in attemptIn
		if err := args.Get(&in); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		at[info.ActivityID] = len(acts)
		acts = append(acts, synthAct{typ: info.ActivityType.Name, id: info.ActivityID, in: in})
		mu.Unlock()
	})
	h.env.SetOnActivityCompletedListener(func(info *activity.Info, res converter.EncodedValue, err error) {
		if err != nil {
			t.Errorf("activity %s: %v", info.ActivityID, err)
			return
		}
		var out attemptOut
		if err := res.Get(&out); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		acts[at[info.ActivityID]].out = &out
		mu.Unlock()
	})
	if st := h.run(map[string]any{}); st.Status != "succeeded" {
		t.Fatalf("run: %s %+v", st.Status, st.Error)
	}
	r := traceOf(fold(t, nil, "r1", synthetic(t, converter.GetDefaultDataConverter(), acts...)), time.Now()).Runs[0]
	want := map[string][3]int{"a": {30, 10, 1}, "clerk": {12, 5, 2}}
	if len(r.Steps) != len(want) {
		t.Fatalf("steps %+v", r.Steps)
	}
	for _, s := range r.Steps {
		if w := want[s.StepID]; [3]int{s.TokensIn, s.TokensOut, s.ModelCalls} != w {
			t.Errorf("step %s: tokens %d in, %d out, %d model calls; want %v", s.StepID, s.TokensIn, s.TokensOut, s.ModelCalls, w)
		}
	}
	if r.TokensIn != 42 || r.TokensOut != 15 || r.ModelCalls != 3 {
		t.Errorf("run: tokens %d in, %d out, %d model calls; want 42, 15, 3", r.TokensIn, r.TokensOut, r.ModelCalls)
	}
}
