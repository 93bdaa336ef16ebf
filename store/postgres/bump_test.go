package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// TestBumpsRetryAfterARacingCommit: a lease, a claim and a decision move a
// run's version by appending a journal row. When a commit appends the
// version they read first, the primary key fails their statement, and
// they must try again on the new head instead of reporting a conflict to
// a person or a worker who raced nobody's lease. The race is made
// deterministic: another transaction holds the next version's row
// uncommitted while the bump runs, then commits.
func TestBumpsRetryAfterARacingCommit(t *testing.T) {
	t.Parallel()
	schema := testSchema(t)
	s := openTest(t, schema, nil)
	defer s.Close()
	ctx := t.Context()
	tr := &store.Transition{RunID: "run", Create: &store.CreateRunParams{ID: "run", Flow: "f"},
		Events:    []*trace.Event{{Seq: 1, Kind: trace.StepStarted, StepID: "ask"}},
		Approvals: []*store.Approval{{StepID: "ask", Kind: store.KindApproval}}}
	if err := s.Commit(ctx, tr); err != nil {
		t.Fatal(err)
	}
	conn := admin(t)
	if _, err := conn.Exec(ctx, "SET search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	bumps := []struct {
		name string
		do   func(context.Context) error
	}{
		{"AcquireLease", func(ctx context.Context) error {
			_, err := s.AcquireLease(ctx, &store.LeaseParams{RunID: "run", Owner: "me", TTL: time.Second, Now: at})
			return err
		}},
		{"ClaimRuns", func(ctx context.Context) error {
			// at the lease's expiry: the run is ready again.
			runs, err := s.ClaimRuns(ctx, &store.ClaimParams{Owner: "worker", TTL: time.Second, Now: at.Add(time.Second)})
			if err == nil && len(runs) != 1 {
				t.Errorf("ClaimRuns claimed %d runs, want 1", len(runs))
			}
			return err
		}},
		{"DecideApproval", func(ctx context.Context) error {
			_, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "run", StepID: "ask", Status: store.ApprovalApproved})
			return err
		}},
	}
	for _, b := range bumps {
		r, err := s.GetRun(ctx, "run")
		if err != nil {
			t.Fatal(err)
		}
		// a commit at r.Version, in flight: its row is written, not committed.
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO rein_journal (run_id, version, seq) VALUES ('run', $1, $2)`, r.Version+1, r.LastSeq); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- b.do(ctx) }()
		// the bump waits on the row's key; let it get there, then commit.
		waitForLockWait(t, s, schema)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s racing a commit: %v", b.name, err)
		}
		after, err := s.GetRun(ctx, "run")
		if err != nil {
			t.Fatal(err)
		}
		if after.Version != r.Version+2 {
			t.Errorf("%s after a racing commit: version %d, want %d (the commit's, then its own)", b.name, after.Version, r.Version+2)
		}
	}
}

// waitForLockWait waits until one of s's connections waits on a lock.
func waitForLockWait(t *testing.T, s *Store, schema string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := s.db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, schema).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the bump never waited on the racing commit's row")
}
