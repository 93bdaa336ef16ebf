package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// commitSteps commits n one-event transitions to run id, from version v.
func commitSteps(t *testing.T, s *Store, id string, v int64, n int) int64 {
	t.Helper()
	for range n {
		seq := v + 1
		tr := &store.Transition{RunID: id, Version: v,
			Events: []*trace.Event{{Seq: seq, Kind: trace.StepSettled, RunID: id, StepID: fmt.Sprint("s", seq)}},
			Steps:  []*store.Step{{StepID: fmt.Sprint("s", seq), Status: trace.StepSucceeded, Output: []byte(fmt.Sprint(seq - 1))}}}
		if err := s.Commit(t.Context(), tr); err != nil {
			t.Fatalf("commit %s v%d: %v", id, v, err)
		}
		v = tr.Version
	}
	return v
}

func journalState(t *testing.T, s *Store) (indexed, mark, tail int) {
	t.Helper()
	if err := s.rdb.QueryRow(`SELECT (SELECT count(*) FROM journal_index), (SELECT indexed FROM journal_mark),
		(SELECT count(*) FROM journal WHERE id > (SELECT indexed FROM journal_mark))`).Scan(&indexed, &mark, &tail); err != nil {
		t.Fatal(err)
	}
	return
}

// checkRun reads a run back through every reader: GetRun, Events, Steps.
func checkRun(t *testing.T, s *Store, id string, n int) {
	t.Helper()
	r, err := s.GetRun(t.Context(), id)
	if err != nil || r.Version != int64(n) || r.LastSeq != int64(n) {
		t.Fatalf("GetRun(%s) = version %d, last seq %d, %v; want %d, %d", id, r.Version, r.LastSeq, err, n, n)
	}
	evs, err := s.Events(t.Context(), id, int64(n/2), 0)
	if err != nil || len(evs) != n-n/2 || evs[0].Seq != int64(n/2+1) {
		t.Fatalf("Events(%s, after %d) = %d events, %v", id, n/2, len(evs), err)
	}
	steps, err := s.Steps(t.Context(), id)
	if err != nil || len(steps) != n || string(steps[n-1].Output) != fmt.Sprint(n-1) {
		t.Fatalf("Steps(%s) = %d steps, %v", id, len(steps), err)
	}
}

// Runs whose journal rows are partly indexed and partly in the tail read
// back whole, before and after a reopen (which forgets the tail's length).
func TestJournalIndexAndTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	s := openFile(t, path, nil)
	const runs = 5
	per := indexEvery/runs + 7 // together past one index pass, with a tail
	for i := range runs {
		id := fmt.Sprint("run-", i)
		if _, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: id, Flow: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range runs {
		commitSteps(t, s, fmt.Sprint("run-", i), 0, per)
	}
	indexed, mark, tail := journalState(t, s)
	if indexed < indexEvery || mark == 0 || tail == 0 || tail >= indexEvery {
		t.Fatalf("journal: %d indexed (mark %d), %d in the tail; want ≥ %d indexed and a short tail", indexed, mark, tail, indexEvery)
	}
	for i := range runs {
		checkRun(t, s, fmt.Sprint("run-", i), per)
	}
	s.Close()
	s = openFile(t, path, nil)
	for i := range runs {
		checkRun(t, s, fmt.Sprint("run-", i), per)
	}
	// The first batch after a reopen indexes the tail it does not know.
	commitSteps(t, s, "run-0", int64(per), 1)
	if _, _, tail := journalState(t, s); tail != 0 {
		t.Errorf("after reopen and one commit, %d rows in the tail; want 0", tail)
	}
	checkRun(t, s, "run-0", per+1)
}

// forceIndex makes the writer index the whole journal in its next batch.
func forceIndex(t *testing.T, s *Store) {
	t.Helper()
	if err := s.w.write(t.Context(), func(x *wtx) error { x.w.tail = -1; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, tail := journalState(t, s); tail != 0 {
		t.Fatalf("%d rows in the tail after an index pass", tail)
	}
}

// Pruning the run that holds the journal's last rows frees their ids; rows
// written after must still be found (above the mark, in the tail).
func TestPruneLastRunKeepsNewRowsFindable(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "rein.db"), nil)
	ctx := t.Context()
	for _, id := range []string{"old", "last"} {
		if _, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: id, Flow: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	commitSteps(t, s, "old", 0, 3)
	v := commitSteps(t, s, "last", 0, 3)
	if err := s.Commit(ctx, &store.Transition{RunID: "last", Version: v,
		Events: []*trace.Event{{Seq: v + 1, Kind: trace.RunSettled, RunID: "last"}},
		Run:    &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	forceIndex(t, s) // "last"'s rows are the journal's last, below the mark
	res, err := s.Prune(ctx, &store.PruneParams{Before: time.Now(), Now: time.Now()})
	if err != nil || res.Runs != 1 {
		t.Fatalf("Prune = %+v, %v; want 1 run", res, err)
	}
	if _, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "new", Flow: "f"}); err != nil {
		t.Fatal(err)
	}
	commitSteps(t, s, "new", 0, 2)
	checkRun(t, s, "new", 2)
	checkRun(t, s, "old", 3)
}

// A step record rides on its transition's last event of the same step,
// status and attempt, and gets a row of its own otherwise; either way the
// steps read back in the order the transition gave them, and the events
// in theirs.
func TestStepRecordsShareEventRows(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "rein.db"), nil)
	ctx := t.Context()
	if _, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "run", Flow: "f"}); err != nil {
		t.Fatal(err)
	}
	ev := func(seq int64, kind trace.Kind, step, status string) *trace.Event {
		return &trace.Event{Seq: seq, Kind: kind, RunID: "run", StepID: step, Status: status, Attempt: 1}
	}
	tr := &store.Transition{RunID: "run",
		// b settles before a in the events, a comes first in the steps:
		// a rides on its event, b cannot (it would read before a); c has
		// no event of its status.
		Events: []*trace.Event{ev(1, trace.StepSettled, "b", "succeeded"), ev(2, trace.StepSettled, "a", "succeeded"),
			ev(3, trace.StepStarted, "c", "running")},
		Steps: []*store.Step{{StepID: "a", Status: trace.StepSucceeded, Attempt: 1, Output: []byte(`"A"`)},
			{StepID: "b", Status: trace.StepSucceeded, Attempt: 1, Output: []byte(`"B"`)},
			{StepID: "c", Status: trace.StepFailed, Attempt: 1}}}
	if err := s.Commit(ctx, tr); err != nil {
		t.Fatal(err)
	}
	var rows, shared int
	if err := s.rdb.QueryRow(`SELECT count(*), count(kind IS NOT NULL AND record IS NOT NULL OR NULL) FROM journal`).Scan(&rows, &shared); err != nil {
		t.Fatal(err)
	}
	if rows != 5 || shared != 1 {
		t.Errorf("%d rows, %d of them an event with a step record; want 5 and 1 (a's)", rows, shared)
	}
	steps, err := s.Steps(ctx, "run")
	if err != nil || len(steps) != 3 || steps[0].StepID != "a" || string(steps[0].Output) != `"A"` || steps[1].StepID != "b" ||
		string(steps[1].Output) != `"B"` || steps[2].StepID != "c" || steps[2].Status != trace.StepFailed {
		t.Fatalf("Steps = %+v, %v; want a, b, c as committed", steps, err)
	}
	evs, err := s.Events(ctx, "run", 0, 0)
	if err != nil || len(evs) != 3 || evs[0].StepID != "b" || evs[1].StepID != "a" || evs[1].Status != "succeeded" || evs[1].Attempt != 1 {
		t.Fatalf("Events = %+v, %v", evs, err)
	}
}

// Prune deletes every journal row of the runs it deletes — of the
// transitions in journal_index (a transition of several rows is one entry)
// and of the tail — and none of the runs it keeps.
func TestPruneDeletesEveryJournalRow(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "rein.db"), nil)
	ctx := t.Context()
	for _, id := range []string{"kept", "pruned"} {
		if _, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: id, Flow: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	commitSteps(t, s, "kept", 0, 3)
	v := commitSteps(t, s, "pruned", 0, 3)
	forceIndex(t, s) // these rows indexed
	v = commitSteps(t, s, "pruned", v, 2)
	if err := s.Commit(ctx, &store.Transition{RunID: "pruned", Version: v,
		Events: []*trace.Event{{Seq: v + 1, Kind: trace.RunSettled, RunID: "pruned"}},
		Run:    &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	rows := func() (kept, orphans int) {
		t.Helper()
		if err := s.rdb.QueryRow(`SELECT count(*) FILTER (WHERE rk = (SELECT rk FROM runs WHERE id = 'kept')),
			count(*) FILTER (WHERE rk NOT IN (SELECT rk FROM runs)) FROM journal`).Scan(&kept, &orphans); err != nil {
			t.Fatal(err)
		}
		return kept, orphans
	}
	if res, err := s.Prune(ctx, &store.PruneParams{Before: time.Now(), Now: time.Now()}); err != nil || res.Runs != 1 {
		t.Fatalf("Prune = %+v, %v; want 1 run", res, err)
	}
	if kept, orphans := rows(); kept != 6 || orphans != 0 {
		t.Errorf("after Prune: %d rows of the kept run (want 6), %d of no run (want 0)", kept, orphans)
	}
	checkRun(t, s, "kept", 3)
}
