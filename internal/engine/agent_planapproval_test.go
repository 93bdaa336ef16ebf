package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// planApprovalScript: turn 1 runs a plan whose last step refunds
// (approval: required); turn 2 answers.
var planApprovalScript = []model.Response{
	{ToolCalls: []model.ToolCall{call("p", "execute_plan", `{"objective":"refund the double charge","steps":[
		{"id":"look","tool":"status","args":{"order":"1042"}},
		{"id":"pay","tool":"charge","depends_on":["look"],"args":{"order":"1042"}},
		{"id":"back","tool":"refund","depends_on":["pay"],"args":{"order":"1042"}}]}`)}},
	{Text: "done with order 1042"},
}

func TestAgentPlanStepWaitsForApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, verdict := range []store.ApprovalStatus{store.ApprovalApproved, store.ApprovalRejected} {
		t.Run(string(verdict), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			st := openSQLite(t)
			newEngine := func() (*engine.Engine, *flow.Flow) {
				_, f := agentEngine(t, dir, st, "")
				models := &model.Registry{}
				models.Register("m", agentTurns(dir, "", planApprovalScript...))
				return engine.New(engine.Config{Tools: agentTools(dir, ""), Models: models, Store: st}), f
			}
			e, f := newEngine()
			res, err := e.Run(ctx, f, agentInput, &engine.RunOptions{RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunWaiting)
			if len(res.Pending) != 1 {
				t.Fatalf("pending %+v", res.Pending)
			}
			p := res.Pending[0]
			if p.StepID != "support/turn1/call1/back" || p.Tool != "refund" || string(p.Args) != `{"order":"1042"}` {
				t.Fatalf("the approval does not record the exact plan step call: %+v", p)
			}
			if got := readLines(t, filepath.Join(dir, "refund.log")); len(got) != 0 {
				t.Fatalf("refund ran before approval: %v", got)
			}
			if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: p.StepID, Status: verdict, Comment: "already refunded"}); err != nil {
				t.Fatal(err)
			}
			// another process: a fresh engine, model and tools over the same store
			e2, f2 := newEngine()
			res, err = e2.Resume(ctx, f2, "r")
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunSucceeded)
			if res.Outputs["support"] != "done with order 1042" {
				t.Errorf("output %v", res.Outputs["support"])
			}
			if got := strings.Join(readLines(t, filepath.Join(dir, "model.log")), " "); got != "turn1 turn2" {
				t.Errorf("model asked for %s", got)
			}
			for _, name := range []string{"status", "charge"} {
				if got := readLines(t, filepath.Join(dir, name+".log")); len(got) != 2 {
					t.Errorf("%s calls %v: a completed plan step ran again", name, got)
				}
			}
			refunds := readLines(t, filepath.Join(dir, "refund.log"))
			if verdict == store.ApprovalApproved && (len(refunds) != 2 || refunds[0] != "r/support/1/turn1/call1/plan1/back" || refunds[1] != "1042") {
				t.Errorf("approved refund calls: %v", refunds)
			}
			if verdict == store.ApprovalRejected && len(refunds) != 0 {
				t.Errorf("a rejected plan step ran: %v", refunds)
			}
			evs, err := st.Events(ctx, "r", 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{`\"success\":true`, `\"completed_steps\":[\"look\",\"pay\",\"back\"]`}
			if verdict == store.ApprovalRejected {
				want = []string{`\"success\":false`, `\"failed_steps\":[{\"error\":\"rejected by a person: already refunded\",\"id\":\"back\",\"tool\":\"refund\"}]`, `\"completed_steps\":[\"look\",\"pay\"]`}
			}
			var answer string
			for _, ev := range evs {
				if d := agentCallData(t, ev); strings.Contains(d, `"status":"ok"`) && strings.Contains(d, "execute_plan") {
					answer = d
				}
			}
			for _, w := range want {
				if !strings.Contains(answer, w) {
					t.Errorf("the execute_plan answer lacks %s: %s", w, answer)
				}
			}
		})
	}
}
