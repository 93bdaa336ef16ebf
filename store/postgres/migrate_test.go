package postgres

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// oldSchema makes a fresh schema at version upTo, as an older rein wrote
// it, and returns it with a pool whose search_path is it, which the
// caller closes.
func oldSchema(t *testing.T, upTo int) (string, *pgxpool.Pool) {
	t.Helper()
	schema := testSchema(t)
	cfg, err := pgxpool.ParseConfig(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	if err := migrate(t.Context(), db, schema, upTo); err != nil {
		pool.Close()
		t.Fatalf("migrate to schema %d: %v", upTo, err)
	}
	return schema, pool
}

// TestMigrateSchema1Journal writes runs the way schema 1 stored them (a
// row per event, an upserted row per step, the version on the run row),
// opens the schema with this binary, and checks that migration 2 turned
// them into journal rows that read back the same and carry on: versions,
// sequences, byte-exact payloads, blobs, approvals and Prune.
func TestMigrateSchema1Journal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema, pool := oldSchema(t, 1)

	big := []byte(`"` + strings.Repeat("o", 100) + `"`) // a step output stored as a blob
	bigIn := []byte(`{"in":"` + strings.Repeat("i", 100) + `"}`)
	gone := []byte(`"only the pruned run refers to me"`)
	sha := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	started := time.Date(2026, 11, 3, 4, 5, 6, 123456000, time.UTC)
	settled := started.Add(1500 * time.Microsecond)
	event := func(seq int64, kind trace.Kind, step string) []byte {
		b, err := json.Marshal(&trace.Event{Seq: seq, Kind: kind, RunID: "r1", StepID: step, Time: started})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO rein_runs (id, flow, status, version, last_seq, last_commit) VALUES
		('r0', 'f', 'pending', 0, 0, NULL),
		('r1', 'f', 'waiting', 4, 5, '7d1f7a57-4d3f-4c39-8a4b-6a0c1e3e2f10')`)
	exec(`INSERT INTO rein_runs (id, flow, status, version, last_seq, settled_at) VALUES
		('r2', 'f', 'succeeded', 2, 1, now() - interval '40 days')`)
	for i, kind := range []trace.Kind{trace.RunStarted, trace.StepStarted, trace.StepSettled, trace.StepStarted} {
		step := map[int]string{1: "a", 2: "a", 3: "b"}[i]
		exec(`INSERT INTO rein_events (run_id, seq, version, data) VALUES ('r1', $1, 1, $2)`, int64(i+1), event(int64(i+1), kind, step))
	}
	// schema 1 numbered an event sent with seq 0 in its row alone
	exec(`INSERT INTO rein_events (run_id, seq, version, data) VALUES ('r1', 5, 1, $1)`, event(0, trace.StepStarted, "c"))
	exec(`INSERT INTO rein_events (run_id, seq, version, data) VALUES ('r2', 1, 1, '{"kind":"run_started"}')`)
	exec(`INSERT INTO rein_blobs (sha256, data) VALUES ($1, $2), ($3, $4), ($5, $6)`, sha(big), big, sha(bigIn), bigIn, sha(gone), gone)
	exec(`INSERT INTO rein_steps (run_id, step_id, type, status, attempt, output, output_sha, idempotent, started_at, settled_at)
		VALUES ('r1', 'a', 'tool', 'succeeded', 2, $1, 'sha-a', true, $2, $3)`, []byte(`{"x": 1,  "é": [ ]}`), started, settled)
	exec(`INSERT INTO rein_steps (run_id, step_id, status, attempt, output_sha, output_blob, input, error, started_at)
		VALUES ('r1', 'b', 'failed', 1, $1, $1, $2, $3, $4)`, sha(big), []byte(`{"q":"ü"}`), []byte(`{"message":"no"}`), started)
	exec(`INSERT INTO rein_steps (run_id, step_id, status, attempt, input_blob)
		VALUES ('r1', 'c', 'waiting', 1, $1)`, sha(bigIn))
	exec(`INSERT INTO rein_steps (run_id, step_id, status, output_sha, output_blob) VALUES ('r2', 'z', 'succeeded', $1, $1)`, sha(gone))
	exec(`INSERT INTO rein_approvals (run_id, id, step_id, kind, status) VALUES ('r1', 'ap1', 'c', 'approval', 'pending')`)
	pool.Close()

	s := openTest(t, schema, nil)
	defer s.Close()
	r1, err := s.GetRun(ctx, "r1")
	if err != nil || r1.Version != 4 || r1.LastSeq != 5 || r1.Status != trace.RunWaiting {
		t.Fatalf("migrated run r1 = %+v, %v; want version 4, last seq 5, waiting", r1, err)
	}
	if r0, err := s.GetRun(ctx, "r0"); err != nil || r0.Version != 0 || r0.LastSeq != 0 {
		t.Fatalf("migrated run r0 = %+v, %v; want version 0", r0, err)
	}
	evs, err := s.Events(ctx, "r1", 0, 0)
	if err != nil || len(evs) != 5 {
		t.Fatalf("Events(r1) = %d events, %v; want 5", len(evs), err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.RunID != "r1" || !e.Time.Equal(started) {
			t.Errorf("event %d = %+v", i, e)
		}
	}
	if evs[2].Kind != trace.StepSettled || evs[2].StepID != "a" || evs[4].StepID != "c" {
		t.Errorf("events 3, 5 = %s %s, %s %s; want step_settled a, step_started c", evs[2].Kind, evs[2].StepID, evs[4].Kind, evs[4].StepID)
	}
	if tail, err := s.Events(ctx, "r1", 3, 1); err != nil || len(tail) != 1 || tail[0].Seq != 4 {
		t.Errorf("Events(r1, after 3, limit 1) = %v, %v", tail, err)
	}

	steps, err := s.Steps(ctx, "r1")
	if err != nil || len(steps) != 3 {
		t.Fatalf("Steps(r1) = %d steps, %v; want 3", len(steps), err)
	}
	a, b, c := steps[0], steps[1], steps[2]
	if a.StepID != "a" || a.Type != "tool" || a.Status != trace.StepSucceeded || a.Attempt != 2 || !a.Idempotent ||
		a.OutputSHA != "sha-a" || string(a.Output) != `{"x": 1,  "é": [ ]}` || !a.StartedAt.Equal(started) || !a.SettledAt.Equal(settled) {
		t.Errorf("step a = %+v (output %s)", a, a.Output)
	}
	if b.StepID != "b" || b.Status != trace.StepFailed || !bytes.Equal(b.Output, big) || b.OutputSHA != sha(big) ||
		string(b.Input) != `{"q":"ü"}` || string(b.Error) != `{"message":"no"}` || !b.SettledAt.IsZero() {
		t.Errorf("step b = %+v (output %s)", b, b.Output)
	}
	if c.StepID != "c" || c.Status != trace.StepWaiting || !bytes.Equal(c.Input, bigIn) || c.Output != nil {
		t.Errorf("step c = %+v (input %s)", c, c.Input)
	}

	// The runs carry on from their versions.
	stale := &store.Transition{RunID: "r1", Version: 3, Events: []*trace.Event{{Seq: 6, Kind: trace.StepSettled, StepID: "c"}}}
	if err := s.Commit(ctx, stale); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Commit at r1's version before the migration's: err = %v, want ErrConflict", err)
	}
	dup := &store.Transition{RunID: "r1", Version: 4, Events: []*trace.Event{{Seq: 5, Kind: trace.StepSettled, StepID: "c"}}}
	if err := s.Commit(ctx, dup); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Commit repeating r1's last seq: err = %v, want ErrConflict", err)
	}
	if _, err := s.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r1", StepID: "c", Status: store.ApprovalApproved}); err != nil {
		t.Fatalf("DecideApproval of a migrated approval: %v", err)
	}
	next := &store.Transition{RunID: "r1", Version: 5, Events: []*trace.Event{{Seq: 6, Kind: trace.StepSettled, StepID: "c"}},
		Steps: []*store.Step{{StepID: "c", Status: trace.StepSucceeded, Attempt: 1, Output: json.RawMessage(`true`)}}}
	if err := s.Commit(ctx, next); err != nil {
		t.Fatalf("Commit after the decision: %v", err)
	}
	if steps, err := s.Steps(ctx, "r1"); err != nil || len(steps) != 3 || string(steps[2].Output) != "true" || steps[2].Input != nil {
		t.Errorf("Steps(r1) after a new record of c = %v, %v", steps, err)
	}
	if err := s.Commit(ctx, &store.Transition{RunID: "r0", Events: []*trace.Event{{Seq: 1, Kind: trace.RunStarted}}}); err != nil {
		t.Errorf("first Commit of migrated run r0: %v", err)
	}

	// Prune takes the finished run and the blob only it referred to.
	res, err := s.Prune(ctx, &store.PruneParams{Before: time.Now().Add(-24 * time.Hour), Now: time.Now()})
	if err != nil || res.Runs != 1 || res.Blobs != 1 {
		t.Fatalf("Prune = %+v, %v; want 1 run, 1 blob", res, err)
	}
	if _, err := s.Blob(ctx, sha(gone)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the pruned run's blob: err = %v, want ErrNotFound", err)
	}
	for _, kept := range [][]byte{big, bigIn} {
		if _, err := s.Blob(ctx, sha(kept)); err != nil {
			t.Errorf("blob of a kept run: %v", err)
		}
	}
	var left int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM rein_journal WHERE run_id = 'r2'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("the pruned run left %d journal rows (%v)", left, err)
	}
}
