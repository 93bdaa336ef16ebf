package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// killConns terminates every server backend of the store opened with
// application_name = schema, and reports how many it killed.
func killConns(t *testing.T, schema string) int {
	t.Helper()
	conn := admin(t)
	var n int
	err := conn.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND pid <> pg_backend_pid()`, schema).Scan(&n)
	if err != nil {
		t.Fatalf("terminate backends: %v", err)
	}
	return n
}

// step returns the transition of step i (two events and a step upsert).
func step(runID string, version int64, i int) *store.Transition {
	id := fmt.Sprintf("s%03d", i)
	return &store.Transition{RunID: runID, Version: version,
		Events: []*trace.Event{
			{Seq: int64(2*i + 1), Kind: trace.StepStarted, StepID: id},
			{Seq: int64(2*i + 2), Kind: trace.StepSettled, StepID: id, Status: string(trace.StepSucceeded)},
		},
		Steps: []*store.Step{{StepID: id, Status: trace.StepSucceeded, Attempt: 1}},
	}
}

// commitSurviving commits tr the way an engine would after a failure: it
// retries with the same version; a conflict on a retry means the earlier
// attempt did commit, which the run's journal must then show.
func commitSurviving(t *testing.T, s *Store, tr *store.Transition) (failures int) {
	t.Helper()
	ctx := t.Context()
	v := tr.Version
	for range 40 {
		err := s.Commit(ctx, tr)
		if err == nil {
			if tr.Version != v+1 {
				t.Fatalf("Commit returned nil but Version %d (was %d)", tr.Version, v)
			}
			return failures
		}
		failures++
		if failures == 1 {
			t.Logf("Commit %s at version %d failed: %v", tr.RunID, v, err)
		}
		if !strings.Contains(err.Error(), tr.RunID) {
			t.Errorf("Commit error does not name the run: %v", err)
		}
		if errors.Is(err, store.ErrConflict) {
			g, gerr := s.GetRun(ctx, tr.RunID)
			if gerr == nil && g.Version == v+1 && g.LastSeq == tr.Events[len(tr.Events)-1].Seq {
				tr.Version = v + 1
				return failures
			}
			t.Fatalf("Commit conflict that is not its own earlier attempt: %v (run at %d)", err, g.Version)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("Commit of %s at version %d kept failing", tr.RunID, v)
	return failures
}

// checkJournal asserts run holds exactly steps transitions, each once.
func checkJournal(t *testing.T, s *Store, runID string, v0 int64, steps int) {
	t.Helper()
	ctx := context.Background()
	g, err := s.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, runID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Steps(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != v0+int64(steps) || g.LastSeq != int64(2*steps) || len(evs) != 2*steps || len(st) != steps {
		t.Fatalf("after %d transitions: version %d (want %d), last_seq %d, %d events, %d steps",
			steps, g.Version, v0+int64(steps), g.LastSeq, len(evs), len(st))
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: a transition was lost or doubled", i, e.Seq)
		}
	}
}

// TestConnectionKilledBetweenCommits kills the pool's server connections
// between transitions: the next Commit reconnects and succeeds.
func TestConnectionKilledBetweenCommits(t *testing.T) {
	t.Parallel()
	schema := testSchema(t)
	s := openTest(t, schema, &Options{MaxConns: 2})
	defer s.Close()
	r, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: "run", Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	version, killed := r.Version, 0
	const steps = 20
	for i := range steps {
		if i%4 == 1 {
			killed += killConns(t, schema)
		}
		tr := step("run", version, i)
		if f := commitSurviving(t, s, tr); f > 0 {
			t.Logf("step %d: %d failed attempts before the commit went through", i, f)
		}
		version = tr.Version
	}
	if killed == 0 {
		t.Fatal("no connection was killed: the test tested nothing")
	}
	checkJournal(t, s, "run", r.Version, steps)
}

// TestConnectionKilledDuringCommits kills the pool's connections over and
// over while transitions are being committed, so some die mid-batch and
// some after the server committed but before the answer arrived. No
// committed transition may be lost or doubled.
func TestConnectionKilledDuringCommits(t *testing.T) {
	t.Parallel()
	schema := testSchema(t)
	s := openTest(t, schema, &Options{MaxConns: 2})
	defer s.Close()
	r, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: "run", Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	conn := admin(t)
	ctx, stop := context.WithCancel(t.Context())
	var kills atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var n int64
			if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = $1 AND pid <> pg_backend_pid()`, schema).Scan(&n); err == nil {
				kills.Add(n)
			}
			// Every 30 to 120 ms: often enough to land inside commits,
			// with gaps that a commit slowed by a loaded machine (its
			// first run on a new connection takes up to 60 ms there)
			// can still get through.
			time.Sleep(time.Duration(30+rand.IntN(91)) * time.Millisecond)
		}
	}()
	version, failures := r.Version, 0
	const steps = 80
	for i := range steps {
		tr := step("run", version, i)
		failures += commitSurviving(t, s, tr)
		version = tr.Version
	}
	stop()
	<-done
	t.Logf("%d backends killed, %d Commit calls failed and were retried by the caller", kills.Load(), failures)
	if kills.Load() == 0 {
		t.Fatal("no connection was killed: the test tested nothing")
	}
	checkJournal(t, s, "run", r.Version, steps)
}

// TestCommitAnswerLost: the server commits a transition but its answer
// never arrives (simulated: the attempt reports a lost connection). The
// retry must recognise its own transition and report success, not
// ErrConflict, and must not apply it twice.
func TestCommitAnswerLost(t *testing.T) {
	t.Parallel()
	s := openTest(t, "", nil)
	defer s.Close()
	ctx := t.Context()
	r, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "run", Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	lost := errors.New("read tcp: connection reset by peer")
	var attempts []error
	s.afterAttempt = func(attempt int, err error) error {
		attempts = append(attempts, err)
		if attempt == 1 && err == nil {
			return &net.OpError{Op: "read", Net: "tcp", Err: lost}
		}
		return err
	}
	tr := step("run", r.Version, 0)
	if err := s.Commit(ctx, tr); err != nil {
		t.Fatalf("Commit whose first answer was lost: %v", err)
	}
	if len(attempts) != 2 || attempts[0] != nil || !errors.Is(mapErr("", attempts[1]), store.ErrConflict) {
		t.Fatalf("attempts = %v, want a committed first attempt and a version conflict on the retry", attempts)
	}
	if tr.Version != r.Version+1 {
		t.Errorf("after the recognised retry: Version %d, want %d", tr.Version, r.Version+1)
	}
	s.afterAttempt = nil
	evs, err := s.Events(ctx, "run", 0, 0)
	if err != nil || len(evs) != 2 {
		t.Fatalf("journal holds %d events, %v; want 2 (applied once)", len(evs), err)
	}

	// A transition that really conflicts is still a conflict after a retry.
	s.afterAttempt = func(attempt int, err error) error {
		if attempt == 1 {
			return &net.OpError{Op: "read", Net: "tcp", Err: lost}
		}
		return err
	}
	stale := step("run", r.Version, 1)
	if err := s.Commit(ctx, stale); !errors.Is(err, store.ErrConflict) {
		t.Errorf("stale Commit retried after a lost connection: err = %v, want ErrConflict", err)
	}
}

// TestCommitGivesUpClearly: when every attempt loses its connection,
// Commit fails with an error naming the run and saying the outcome is
// unknown.
func TestCommitGivesUpClearly(t *testing.T) {
	t.Parallel()
	s := openTest(t, "", nil)
	defer s.Close()
	r, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: "run", Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	s.afterAttempt = func(int, error) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	}
	err = s.Commit(t.Context(), step("run", r.Version, 0))
	if err == nil || errors.Is(err, store.ErrConflict) {
		t.Fatalf("err = %v", err)
	}
	t.Logf("error: %v", err)
	for _, want := range []string{"run run", fmt.Sprintf("after %d attempts", commitAttempts), "unknown", "connection reset"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
