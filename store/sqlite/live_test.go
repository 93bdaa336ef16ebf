package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// liveFixture makes runs of every status and moves them along, so that the
// runs in flight sit on both sides of the bulk index's mark.
type liveFixture struct {
	t    *testing.T
	s    *Store
	ver  map[string]int64
	made int
}

func (f *liveFixture) create(n int) {
	f.t.Helper()
	statuses := []trace.RunStatus{trace.RunPending, trace.RunRunning, trace.RunWaiting, trace.RunRunning}
	for i := range n {
		id := fmt.Sprintf("run-%04d", f.made)
		f.made++
		if _, _, err := f.s.CreateRun(f.t.Context(), &store.CreateRunParams{ID: id, Flow: "f", Status: statuses[i%len(statuses)]}); err != nil {
			f.t.Fatal(err)
		}
		f.ver[id] = 0
	}
}

// set commits a status change of run id.
func (f *liveFixture) set(id string, status trace.RunStatus) {
	f.t.Helper()
	u := &store.RunUpdate{Status: status}
	if (&store.Run{Status: status}).Finished() {
		u.SettledAt = time.Now()
	}
	tr := &store.Transition{RunID: id, Version: f.ver[id], Run: u}
	if err := f.s.Commit(f.t.Context(), tr); err != nil {
		f.t.Fatalf("set %s %s: %v", id, status, err)
	}
	f.ver[id] = tr.Version
}

// settleSome settles every third run still in flight, and resumes every
// fifth waiting run.
func (f *liveFixture) settleSome() {
	f.t.Helper()
	rows, err := f.s.rdb.Query(`SELECT id, status FROM runs WHERE status IN ('pending', 'running', 'waiting') ORDER BY rk`)
	if err != nil {
		f.t.Fatal(err)
	}
	var ids, statuses []string
	for rows.Next() {
		var id, st string
		if err := rows.Scan(&id, &st); err != nil {
			f.t.Fatal(err)
		}
		ids, statuses = append(ids, id), append(statuses, st)
	}
	rows.Close()
	for i, id := range ids {
		switch {
		case i%3 == 0:
			f.set(id, []trace.RunStatus{trace.RunSucceeded, trace.RunFailed, trace.RunCancelled}[i%9/3])
		case i%5 == 1 && statuses[i] == string(trace.RunWaiting):
			f.set(id, trace.RunRunning)
		}
	}
}

// check compares what ListRuns and runs_live give with a plain scan of runs.
func (f *liveFixture) check(when string) {
	f.t.Helper()
	t, s := f.t, f.s
	for _, st := range []trace.RunStatus{trace.RunPending, trace.RunRunning, trace.RunWaiting, trace.RunSucceeded} {
		want := scanIDs(t, s.rdb, `SELECT id FROM runs WHERE status = ? ORDER BY rk DESC`, string(st))
		for _, limit := range []int{1, 7, 1000} {
			got, err := s.ListRuns(t.Context(), &store.ListRunsParams{Status: st, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			w := want[:min(limit, len(want))]
			if ids := runIDs(got); !slices.Equal(ids, w) {
				t.Fatalf("%s: ListRuns(%s, limit %d) = %d runs %v…, want %d %v…", when, st, limit, len(ids), first3(ids), len(w), first3(w))
			}
		}
	}
	// runs_live is exact below the mark: every run in flight, nothing else
	got := scanIDs(t, s.rdb, `SELECT r.id FROM runs_live l JOIN runs r ON r.rk = l.rk ORDER BY l.rk`)
	want := scanIDs(t, s.rdb, `SELECT id FROM runs WHERE status IN ('pending', 'running', 'waiting')
		AND rk <= (SELECT runs FROM journal_mark) ORDER BY rk`)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: runs_live holds %d runs %v…, want %d %v…", when, len(got), first3(got), len(want), first3(want))
	}
	var orphans int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM runs_live WHERE rk NOT IN (SELECT rk FROM runs)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%s: runs_live holds %d runs that do not exist (%v)", when, orphans, err)
	}
}

func scanIDs(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// The runs in flight are found through runs_live, written in bulk, and the
// tail of runs after its mark: ListRuns by status and ClaimRuns see every
// such run once, whichever side of the mark it is on, after runs settle on
// either side, after a reopen, after another connection wrote the file and
// after a prune.
func TestRunsInFlightAcrossIndexAndTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	f := &liveFixture{t: t, s: openFile(t, path, nil), ver: map[string]int64{}}
	f.create(10)
	f.check("tail only")
	f.settleSome()
	f.check("tail only, some settled")
	f.create(indexEvery + 40) // crosses the bulk index
	var live, mark int
	if err := f.s.rdb.QueryRow(`SELECT (SELECT count(*) FROM runs_live), (SELECT runs FROM journal_mark)`).Scan(&live, &mark); err != nil {
		t.Fatal(err)
	}
	if live == 0 || mark == 0 {
		t.Fatalf("runs_live has %d rows, mark %d: the bulk index never ran", live, mark)
	}
	f.check("index and tail")
	f.settleSome() // below the mark: the runs leave runs_live
	f.check("index and tail, some settled")
	f.s.Close()
	f.s = openFile(t, path, nil)
	f.settleSome() // the writer reads the mark again
	f.check("reopened, some settled")
	// another connection settles runs below the mark and indexes: this
	// writer must forget the mark it knew
	first := f.s
	f.s = openFile(t, path, nil)
	f.settleSome()
	f.create(indexEvery)
	f.s = first
	// the first commit after that settles the newest run below the new
	// mark, which is above the mark this writer knew
	newest := scanIDs(t, f.s.rdb, `SELECT id FROM runs WHERE status IN ('pending', 'running', 'waiting')
		AND rk <= (SELECT runs FROM journal_mark) ORDER BY rk DESC LIMIT 1`)
	f.set(newest[0], trace.RunSucceeded)
	f.settleSome()
	f.create(3)
	f.check("after another connection wrote")
	if _, err := f.s.Prune(t.Context(), &store.PruneParams{Before: time.Now().Add(time.Hour), Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	f.check("pruned")
	f.create(indexEvery + 3) // may reuse the pruned runs' rk
	f.settleSome()
	f.check("pruned, then more")

	// ClaimRuns leases every pending or running run without a lease, once
	want := scanIDs(t, f.s.rdb, `SELECT id FROM runs WHERE status IN ('pending', 'running') ORDER BY rk`)
	got, err := f.s.ClaimRuns(t.Context(), &store.ClaimParams{Owner: "w1", TTL: time.Hour, Limit: 7, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if ids := runIDs(got); !slices.Equal(ids, want[:7]) {
		t.Fatalf("ClaimRuns(limit 7) = %v, want the oldest %v", ids, want[:7])
	}
	rest, err := f.s.ClaimRuns(t.Context(), &store.ClaimParams{Owner: "w2", TTL: time.Hour, Limit: 100000, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if ids := runIDs(rest); !slices.Equal(ids, want[7:]) {
		t.Fatalf("ClaimRuns(all) = %d runs %v…, want %d %v…", len(ids), first3(ids), len(want)-7, first3(want[7:]))
	}
}

// A database of schema 1 (the runs_active index) opens with its runs in
// flight moved to runs_live.
func TestMigrationFillsRunsLive(t *testing.T) {
	t.Parallel()
	path, raw := oldFile(t, 1)
	for i, st := range []string{"running", "succeeded", "waiting", "pending", "failed", "running"} {
		if _, err := raw.Exec(`INSERT INTO runs (id, flow, status, created_at, updated_at) VALUES (?, 'f', ?, 0, 0)`, fmt.Sprint("r", i), st); err != nil {
			t.Fatal(err)
		}
	}
	// the last run is in the tail, after the mark
	if _, err := raw.Exec(`UPDATE journal_mark SET runs = 5`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	f := &liveFixture{t: t, s: openFile(t, path, nil), ver: map[string]int64{}}
	got := scanIDs(t, f.s.rdb, `SELECT r.id FROM runs_live l JOIN runs r ON r.rk = l.rk ORDER BY l.rk`)
	if want := []string{"r0", "r2", "r3"}; !slices.Equal(got, want) {
		t.Fatalf("runs_live after the migration = %v, want %v", got, want)
	}
	f.check("migrated")
}
