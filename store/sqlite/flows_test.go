package sqlite

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// ListRuns by flow reads run_flows, written in bulk, and the tail of runs
// it lacks yet: newest first, each run once, with and without a status,
// while runs are partly indexed, after a reopen and after a prune.
func TestListRunsByFlowAcrossIndexAndTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	s := openFile(t, path, nil)
	var (
		want = map[string][]string{} // newest first
		made int
	)
	create := func(n int) {
		for i := range n {
			flow := []string{"a", "b", "c"}[i%3]
			id := fmt.Sprintf("run-%04d", made)
			made++
			if _, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: id, Flow: flow, Status: trace.RunRunning}); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				if err := s.Commit(t.Context(), &store.Transition{RunID: id, Run: &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: time.Now()}}); err != nil {
					t.Fatal(err)
				}
			}
			want[flow] = append([]string{id}, want[flow]...)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, flow := range []string{"a", "b", "c", "none"} {
			for _, limit := range []int{1, 7, 1000} {
				got, err := s.ListRuns(t.Context(), &store.ListRunsParams{Flow: flow, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				w := want[flow][:min(limit, len(want[flow]))]
				if ids := runIDs(got); !slices.Equal(ids, w) {
					t.Fatalf("%s: ListRuns(flow %s, limit %d) = %d runs %v…, want %d %v…", when, flow, limit, len(ids), first3(ids), len(w), first3(w))
				}
			}
			got, err := s.ListRuns(t.Context(), &store.ListRunsParams{Flow: flow, Status: trace.RunRunning, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range got {
				if r.Flow != flow || r.Status != trace.RunRunning {
					t.Fatalf("%s: ListRuns(flow %s, running) holds %s (%s, %s)", when, flow, r.ID, r.Flow, r.Status)
				}
			}
			if n := countStatus(t, s, flow, trace.RunRunning); len(got) != n {
				t.Fatalf("%s: ListRuns(flow %s, running) = %d runs, want %d", when, flow, len(got), n)
			}
		}
	}
	create(10) // all in the tail
	check("tail only")
	create(indexEvery + 40) // crosses the bulk index once
	var flowed, mark int
	if err := s.rdb.QueryRow(`SELECT (SELECT count(*) FROM run_flows), (SELECT runs FROM journal_mark)`).Scan(&flowed, &mark); err != nil {
		t.Fatal(err)
	}
	if flowed == 0 || mark == 0 {
		t.Fatalf("run_flows has %d rows, mark %d: the bulk index never ran", flowed, mark)
	}
	check("index and tail")
	s.Close()
	s = openFile(t, path, nil)
	check("reopened")
	create(5)
	check("reopened, more")
	// reopened, the writer indexes at its first batch: the mark is then
	// the newest run, which the prune below deletes (its rk is reused).
	s.Close()
	s = openFile(t, path, nil)
	create(1)
	res, err := s.Prune(t.Context(), &store.PruneParams{Before: time.Now().Add(time.Hour), Now: time.Now()})
	if err != nil || res.Runs == 0 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	for flow, ids := range want {
		kept := ids[:0]
		for _, id := range ids {
			if _, err := s.GetRun(t.Context(), id); err == nil {
				kept = append(kept, id)
			}
		}
		want[flow] = kept
	}
	check("pruned")
	create(indexEvery + 3) // new runs may reuse the pruned runs' rk
	check("pruned, then more")
}

func runIDs(rs []*store.Run) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func first3(ids []string) []string { return ids[:min(3, len(ids))] }

func countStatus(t *testing.T, s *Store, flow string, status trace.RunStatus) int {
	t.Helper()
	var n int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM runs WHERE flow = ? AND status = ?`, flow, string(status)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A flow text is stored once however many runs pin it, read back with
// each, and dropped when the last run pinning it is pruned.
func TestFlowTextStoredOnce(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "rein.db"), nil)
	text := []byte("name: f\nsteps:\n  - {id: a, tool: t}\n")
	other := []byte("name: f\nsteps:\n  - {id: b, tool: t}\n")
	for i, tx := range [][]byte{text, text, other} {
		id := fmt.Sprint("r", i)
		if _, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: id, Flow: "f", FlowText: tx, Status: trace.RunRunning}); err != nil {
			t.Fatal(err)
		}
	}
	// and one created by its first commit
	tr := &store.Transition{RunID: "r3", Create: &store.CreateRunParams{ID: "r3", Flow: "f", FlowText: text, Status: trace.RunRunning},
		Events: []*trace.Event{{Seq: 1, Kind: trace.RunStarted}}}
	if err := s.Commit(t.Context(), tr); err != nil {
		t.Fatal(err)
	}
	flows := func() int {
		var n int
		if err := s.rdb.QueryRow(`SELECT count(*) FROM flows`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := flows(); n != 2 {
		t.Fatalf("flows holds %d texts, want 2", n)
	}
	for id, want := range map[string][]byte{"r0": text, "r1": text, "r2": other, "r3": text} {
		r, err := s.GetRun(t.Context(), id)
		if err != nil || string(r.FlowText) != string(want) {
			t.Fatalf("GetRun(%s).FlowText = %q, %v; want %q", id, r.FlowText, err, want)
		}
	}
	settle := func(id string, v int64) {
		t.Helper()
		if err := s.Commit(t.Context(), &store.Transition{RunID: id, Version: v, Run: &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
	settle("r0", 0)
	settle("r2", 0)
	if _, err := s.Prune(t.Context(), &store.PruneParams{Before: time.Now().Add(time.Hour), Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if n := flows(); n != 1 {
		t.Fatalf("after pruning r0 and r2, flows holds %d texts, want 1 (r1 and r3 still pin theirs)", n)
	}
	if r, err := s.GetRun(t.Context(), "r1"); err != nil || string(r.FlowText) != string(text) {
		t.Fatalf("GetRun(r1) after prune = %v", err)
	}
	settle("r1", 0)
	settle("r3", 1)
	if _, err := s.Prune(t.Context(), &store.PruneParams{Before: time.Now().Add(time.Hour), Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if n := flows(); n != 0 {
		t.Fatalf("after pruning every run, flows holds %d texts, want 0", n)
	}
	// a pruned text comes back with the next run that pins it
	if _, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: "r4", Flow: "f", FlowText: text}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.GetRun(t.Context(), "r4"); err != nil || string(r.FlowText) != string(text) {
		t.Fatalf("GetRun(r4) = %v, text %q", err, r.FlowText)
	}
}

// A prune and a new run that pins a flow text the prune drops can share a
// batch: the new run must store the text again, not trust the writer's
// memory that it is there.
func TestPruneAndCreateInOneBatchKeepTheFlowText(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "rein.db"), nil)
	text := []byte("name: f\nsteps:\n  - {id: a, tool: t}\n")
	if _, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: "old", Flow: "f", FlowText: text, Status: trace.RunRunning}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(t.Context(), &store.Transition{RunID: "old", Run: &store.RunUpdate{Status: trace.RunSucceeded, SettledAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	p := &store.CreateRunParams{ID: "new", Flow: "f", FlowText: text, Status: trace.RunRunning}
	err := s.w.write(t.Context(), func(x *wtx) error {
		var res store.PruneResult
		all := [3]any{string(trace.RunSucceeded), string(trace.RunFailed), string(trace.RunCancelled)}
		if err := x.prune(all, time.Now().Add(time.Hour), time.Now(), &res); err != nil || res.Runs != 1 {
			return fmt.Errorf("prune: %+v, %v", res, err) //nolint:errorlint // err may be nil
		}
		_, err := insertRun(x, p, trace.RunRunning, flowSHA(text), time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.GetRun(t.Context(), "new")
	if err != nil || string(r.FlowText) != string(text) {
		t.Fatalf("GetRun(new) = text %q, %v; want %q", r.FlowText, err, text)
	}
}
