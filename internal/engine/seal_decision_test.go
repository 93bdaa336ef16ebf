package engine_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/trace"
)

// sealedDecision: a person's comment that holds a secret, sealed beside
// the approval (SealBeside) before the decision stores it redacted, reaches
// the resumed run's next step as written, on st.
func sealedDecision(t *testing.T, st store.Store, runID string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	reg := sealTools(dir, false)
	f, err := flow.Parse([]byte(`name: decided
steps:
  - {id: ok, type: approval}
  - {id: use, tool: use, args: {token: "{ok.comment}"}, requires: [ok]}
`), "decided.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	red := redact.New(sealSecret)
	e := engine.New(engine.Config{Tools: reg, Store: st, Redactor: red, Codec: sealCodec(t, sealKey(t, "k1", 1))})
	res, err := e.Run(ctx, f, nil, &engine.RunOptions{RunID: runID})
	if err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("run: %v %+v", err, res)
	}
	pending, err := st.Approvals(ctx, &store.ListApprovalsParams{RunID: runID, Status: store.ApprovalPending})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending approvals: %v %v", pending, err)
	}
	comment := sealSecret
	hidden := red.String(comment)
	if err := engine.SealBeside(ctx, st, sealCodec(t, sealKey(t, "k1", 1)), runID,
		engine.DecisionPayloads(pending[0].ID, nil, nil, comment, hidden), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: runID, StepID: "ok", Status: store.ApprovalApproved, Comment: hidden}); err != nil {
		t.Fatal(err)
	}
	if res, err = e.Resume(ctx, f, runID); err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if got := readLines(t, dir+"/use.log"); len(got) != 1 || got[0] != sealSecret+"|" {
		t.Fatalf("use was handed %v, want the comment as written", got)
	}
	storeHoldsNot(t, st, runID, sealSecret)
}

func TestSealedDecisionOnSQLite(t *testing.T) {
	t.Parallel()
	sealedDecision(t, openSQLite(t), "decided")
}

func TestSealedDecisionOnPostgres(t *testing.T) {
	dsn := os.Getenv("REIN_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REIN_TEST_POSTGRES_DSN is not set under CI: .ci/run must start PostgreSQL")
		}
		t.Skip(`needs PostgreSQL: eval "$(bash .ci/postgres)"`)
	}
	st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: fmt.Sprintf("sealdec_%d", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sealedDecision(t, st, "decided-pg")
}
