package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

func testCommit(t *testing.T, h Harness) {
	s := open(t, h)
	r := create(t, s, &store.CreateRunParams{ID: "run"})
	started := time.Now().UTC().Truncate(time.Millisecond)
	tr := &store.Transition{
		RunID:   "run",
		Version: r.Version,
		Events:  []*trace.Event{event("run", 1, trace.RunStarted, ""), event("run", 2, trace.StepStarted, "a")},
		Run:     &store.RunUpdate{Status: trace.RunRunning, Usage: json.RawMessage(`{"tokens_in":3}`)},
		Steps:   []*store.Step{{StepID: "a", Type: "tool", Status: trace.StepRunning, Attempt: 1, StartedAt: started}},
	}
	commit(t, s, tr)
	g := get(t, s, "run")
	if g.Version != tr.Version {
		t.Errorf("GetRun Version = %d, Commit set t.Version = %d", g.Version, tr.Version)
	}
	if g.Status != trace.RunRunning || g.LastSeq != 2 || !jsonEqual(g.Usage, []byte(`{"tokens_in":3}`)) {
		t.Errorf("after first commit: Status %q LastSeq %d Usage %s", g.Status, g.LastSeq, g.Usage)
	}
	if g.UpdatedAt.Before(r.UpdatedAt) {
		t.Errorf("UpdatedAt went back: %v < %v", g.UpdatedAt, r.UpdatedAt)
	}
	if st := steps(t, s, "run"); len(st) != 1 || st[0].StepID != "a" || st[0].Status != trace.StepRunning || st[0].RunID != "run" {
		t.Errorf("Steps = %s", jsonString(st))
	}

	settled := started.Add(1500 * time.Millisecond)
	tr2 := &store.Transition{
		RunID:   "run",
		Version: tr.Version,
		Events:  []*trace.Event{event("run", 3, trace.StepSettled, "a"), event("run", 4, trace.RunSettled, "")},
		Run:     &store.RunUpdate{Status: trace.RunFailed, Error: json.RawMessage(`{"step":"a","message":"boom"}`), SettledAt: settled},
		Steps:   []*store.Step{{StepID: "a", Type: "tool", Status: trace.StepFailed, Attempt: 1, Error: json.RawMessage(`{"message":"boom"}`), StartedAt: started, SettledAt: settled}},
	}
	commit(t, s, tr2)
	g = get(t, s, "run")
	if g.Version != tr2.Version || g.Status != trace.RunFailed || g.LastSeq != 4 {
		t.Errorf("after second commit: Version %d (want %d) Status %q LastSeq %d", g.Version, tr2.Version, g.Status, g.LastSeq)
	}
	if !jsonEqual(g.Error, []byte(`{"step":"a","message":"boom"}`)) || !near(g.SettledAt, settled) {
		t.Errorf("Error %s SettledAt %v (want %v)", g.Error, g.SettledAt, settled)
	}
	if !jsonEqual(g.Usage, []byte(`{"tokens_in":3}`)) {
		t.Errorf("Usage = %s: an empty RunUpdate field must be left alone", g.Usage)
	}
	if got := seqs(events(t, s, "run", 0, 0)); !equal(got, []int64{1, 2, 3, 4}) {
		t.Errorf("Events seqs = %v", got)
	}

	// A transition with nothing but a version bump is still a transition.
	tr3 := &store.Transition{RunID: "run", Version: tr2.Version}
	commit(t, s, tr3)
	if g := get(t, s, "run"); g.Version != tr3.Version || g.LastSeq != 4 || g.Status != trace.RunFailed {
		t.Errorf("empty transition: Version %d LastSeq %d Status %q", g.Version, g.LastSeq, g.Status)
	}
}

// snapshot is everything a transition could have changed.
type snapshot struct {
	run       store.Run
	events    string
	steps     string
	approvals string
}

func snap(t *testing.T, s store.Store, runID string) snapshot {
	t.Helper()
	r := get(t, s, runID)
	ap, err := s.Approvals(t.Context(), &store.ListApprovalsParams{RunID: runID})
	if err != nil {
		t.Fatalf("Approvals: %v", err)
	}
	return snapshot{run: *r, events: jsonString(events(t, s, runID, 0, 0)), steps: jsonString(steps(t, s, runID)), approvals: jsonString(ap)}
}

func (a snapshot) diff(b snapshot) string {
	var d []string
	if a.run.Version != b.run.Version || a.run.Status != b.run.Status || a.run.LastSeq != b.run.LastSeq || !bytes.Equal(a.run.Error, b.run.Error) || !a.run.SettledAt.Equal(b.run.SettledAt) {
		d = append(d, fmt.Sprintf("run: version %d→%d status %q→%q last_seq %d→%d", a.run.Version, b.run.Version, a.run.Status, b.run.Status, a.run.LastSeq, b.run.LastSeq))
	}
	if a.events != b.events {
		d = append(d, "events: "+a.events+" → "+b.events)
	}
	if a.steps != b.steps {
		d = append(d, "steps: "+a.steps+" → "+b.steps)
	}
	if a.approvals != b.approvals {
		d = append(d, "approvals: "+a.approvals+" → "+b.approvals)
	}
	return strings.Join(d, "; ")
}

// doomed is a transition that changes every projection, for the cases
// where it must not be applied.
func doomed(runID string, version, seq int64) *store.Transition {
	return &store.Transition{
		RunID:     runID,
		Version:   version,
		Events:    []*trace.Event{event(runID, seq, trace.StepSettled, "a"), event(runID, seq+1, trace.RunSettled, "")},
		Run:       &store.RunUpdate{Status: trace.RunFailed, Error: json.RawMessage(`{"m":"x"}`), SettledAt: time.Now()},
		Steps:     []*store.Step{{StepID: "a", Status: trace.StepFailed, Output: bigJSON("doomed", 2*store.DefaultBlobThreshold)}, {StepID: "z", Status: trace.StepRunning}},
		Approvals: []*store.Approval{{ID: "ap-doomed", StepID: "z", Kind: store.KindApproval}},
	}
}

func setupTwoEvents(t *testing.T, s store.Store, runID string) *store.Transition {
	t.Helper()
	r := create(t, s, &store.CreateRunParams{ID: runID})
	tr := &store.Transition{
		RunID: runID, Version: r.Version,
		Events: []*trace.Event{event(runID, 1, trace.RunStarted, ""), event(runID, 2, trace.StepStarted, "a")},
		Run:    &store.RunUpdate{Status: trace.RunRunning},
		Steps:  []*store.Step{{StepID: "a", Status: trace.StepRunning, Attempt: 1}},
	}
	commit(t, s, tr)
	return tr
}

func testCommitStaleVersion(t *testing.T, h Harness) {
	s := open(t, h)
	tr := setupTwoEvents(t, s, "run")
	before := snap(t, s, "run")
	for _, v := range []int64{tr.Version - 1, tr.Version + 1, tr.Version + 100} {
		d := doomed("run", v, 3)
		err := s.Commit(t.Context(), d)
		wantErr(t, fmt.Sprintf("Commit on version %d (current %d)", v, tr.Version), err, store.ErrConflict)
		if d.Version != v {
			t.Errorf("a rejected Commit changed t.Version from %d to %d", v, d.Version)
		}
		if diff := before.diff(snap(t, s, "run")); diff != "" {
			t.Errorf("a rejected Commit applied something: %s", diff)
		}
	}
	// The current version still commits.
	commit(t, s, &store.Transition{RunID: "run", Version: tr.Version, Events: []*trace.Event{event("run", 3, trace.StepSettled, "a")}})
}

func testCommitDuplicateSeq(t *testing.T, h Harness) {
	s := open(t, h)
	tr := setupTwoEvents(t, s, "run")
	before := snap(t, s, "run")
	d := doomed("run", tr.Version, 3)
	d.Events = append(d.Events, event("run", 2, trace.ModelCall, "dup"))
	if err := s.Commit(t.Context(), d); err == nil {
		t.Fatal("Commit of an event whose seq is already in the journal succeeded")
	}
	if d.Version != tr.Version {
		t.Errorf("a failed Commit changed t.Version to %d", d.Version)
	}
	if diff := before.diff(snap(t, s, "run")); diff != "" {
		t.Errorf("a Commit that failed half-way applied something: %s", diff)
	}
	commit(t, s, &store.Transition{RunID: "run", Version: tr.Version, Events: []*trace.Event{event("run", 3, trace.StepSettled, "a")}})
}

// Events carry their sequence numbers, increasing: one without (Seq 0)
// or out of order within the transition fails the Commit, which applies
// nothing.
func testCommitUnnumbered(t *testing.T, h Harness) {
	s := open(t, h)
	tr := setupTwoEvents(t, s, "run")
	before := snap(t, s, "run")
	for name, evs := range map[string][]*trace.Event{
		"seq 0":        {event("run", 0, trace.StepSettled, "a")},
		"out of order": {event("run", 4, trace.StepSettled, "a"), event("run", 3, trace.StepStarted, "a")},
	} {
		d := doomed("run", tr.Version, 3)
		d.Events = evs
		if err := s.Commit(t.Context(), d); err == nil {
			t.Errorf("Commit of events %s succeeded", name)
		}
		if d.Version != tr.Version {
			t.Errorf("%s: a failed Commit changed t.Version to %d", name, d.Version)
		}
	}
	if diff := before.diff(snap(t, s, "run")); diff != "" {
		t.Errorf("a refused Commit applied something: %s", diff)
	}
	commit(t, s, &store.Transition{RunID: "run", Version: tr.Version, Events: []*trace.Event{event("run", 3, trace.StepSettled, "a")}})
}

func testCommitCancelled(t *testing.T, h Harness) {
	s := open(t, h)
	tr := setupTwoEvents(t, s, "run")
	before := snap(t, s, "run")
	d := doomed("run", tr.Version, 3)
	if err := s.Commit(ctxCancelled(t), d); err == nil {
		t.Fatal("Commit with a cancelled context succeeded")
	}
	if d.Version != tr.Version {
		t.Errorf("a failed Commit changed t.Version to %d", d.Version)
	}
	if diff := before.diff(snap(t, s, "run")); diff != "" {
		t.Errorf("a Commit with a cancelled context applied something: %s", diff)
	}
	commit(t, s, &store.Transition{RunID: "run", Version: tr.Version, Events: []*trace.Event{event("run", 3, trace.StepSettled, "a")}})
}

func testCommitRace(t *testing.T, h Harness) {
	s := open(t, h)
	r := create(t, s, &store.CreateRunParams{ID: "run"})
	version, seq := r.Version, int64(0)
	const racers = 8
	var winners []string
	for round := range 5 {
		seq++
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  = make([]error, racers)
			trs   = make([]*store.Transition, racers)
		)
		for i := range racers {
			step := fmt.Sprintf("r%d-g%d", round, i)
			trs[i] = &store.Transition{RunID: "run", Version: version,
				Events: []*trace.Event{event("run", seq, trace.StepStarted, step)},
				Steps:  []*store.Step{{StepID: step, Status: trace.StepRunning, Attempt: 1}}}
			wg.Go(func() {
				<-start
				errs[i] = s.Commit(t.Context(), trs[i])
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("round %d: racers %d and %d both committed on version %d", round, won, i, version)
			case err == nil:
				won = i
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("round %d: racer %d: err = %v, want ErrConflict", round, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no racer committed", round)
		}
		if trs[won].Version != version+1 {
			t.Errorf("round %d: winner's Version = %d, want %d", round, trs[won].Version, version+1)
		}
		version = trs[won].Version
		winners = append(winners, fmt.Sprintf("r%d-g%d", round, won))
	}
	evs := events(t, s, "run", 0, 0)
	var got []string
	for _, e := range evs {
		got = append(got, e.StepID)
	}
	if !equal(got, winners) {
		t.Errorf("journal holds %v, want only the winners %v", got, winners)
	}
	if st := stepIDs(steps(t, s, "run")); !equal(st, winners) {
		t.Errorf("steps hold %v, want only the winners %v", st, winners)
	}
	if g := get(t, s, "run"); g.Version != version || g.LastSeq != seq {
		t.Errorf("run Version %d LastSeq %d, want %d %d", g.Version, g.LastSeq, version, seq)
	}
}

// testCommitManyRuns commits many runs' transitions at once, as a grouping
// backend sees them, and checks every run kept exactly its own history.
func testCommitManyRuns(t *testing.T, h Harness) {
	s := open(t, h)
	const runs, nSteps = 16, 25
	var wg sync.WaitGroup
	for i := range runs {
		id := fmt.Sprintf("run-%02d", i)
		r := create(t, s, &store.CreateRunParams{ID: id})
		wg.Go(func() {
			tr := &store.Transition{RunID: id, Version: r.Version}
			for k := range nSteps {
				tr.Events = []*trace.Event{event(id, int64(2*k+1), trace.StepSettled, fmt.Sprint(k-1)), event(id, int64(2*k+2), trace.StepStarted, fmt.Sprint(k))}
				tr.Steps = []*store.Step{{StepID: fmt.Sprint(k), Status: trace.StepRunning, Attempt: 1}}
				before := tr.Version
				if err := s.Commit(t.Context(), tr); err != nil {
					t.Errorf("%s: Commit %d: %v", id, k, err)
					return
				}
				if tr.Version != before+1 {
					t.Errorf("%s: Version %d after %d", id, tr.Version, before)
					return
				}
			}
		})
	}
	wg.Wait()
	for i := range runs {
		id := fmt.Sprintf("run-%02d", i)
		g := get(t, s, id)
		evs := events(t, s, id, 0, 0)
		if g.LastSeq != 2*nSteps || len(evs) != 2*nSteps {
			t.Errorf("%s: LastSeq %d, %d events, want %d", id, g.LastSeq, len(evs), 2*nSteps)
		}
		for _, e := range evs {
			if e.RunID != id {
				t.Errorf("%s: holds an event of %s", id, e.RunID)
				break
			}
		}
		if n := len(steps(t, s, id)); n != nSteps {
			t.Errorf("%s: %d steps, want %d", id, n, nSteps)
		}
	}
}

func testEvents(t *testing.T, h Harness) {
	s := open(t, h)
	r := create(t, s, &store.CreateRunParams{ID: "run"})
	full := &trace.Event{
		Seq: 1, Time: time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.UTC), Kind: trace.AttemptFailed,
		RunID: "run", Flow: "triage", StepID: "classify", StepType: "agent", Attempt: 2, Status: "failed",
		DurationMS: 1234, Model: "gpt", Tool: "search", TokensIn: 10, TokensOut: 20, ErrorClass: "transient",
		Error: "timeout \"quoted\" ✓", Origin: trace.OriginModel, Budget: "tokens", Decision: "deny",
		InputSHA: "aa", OutputSHA: "bb", Preview: "line1\nline2\t<tag>&",
	}
	tr := &store.Transition{RunID: "run", Version: r.Version, Events: []*trace.Event{full}}
	commit(t, s, tr)
	for seq := int64(2); seq <= 10; seq += 3 {
		tr.Events = []*trace.Event{event("run", seq, trace.StepStarted, "a"), event("run", seq+1, trace.ModelCall, "a"), event("run", seq+2, trace.StepSettled, "a")}
		commit(t, s, tr)
	}
	all := events(t, s, "run", 0, 0)
	if got := seqs(all); !equal(got, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("Events(0, 0) seqs = %v", got)
	}
	if jsonString(all[0]) != jsonString(full) {
		t.Errorf("event did not round-trip:\n got %s\nwant %s", jsonString(all[0]), jsonString(full))
	}
	if !all[0].Time.Equal(full.Time) {
		t.Errorf("event Time = %v, want %v (nanoseconds kept)", all[0].Time, full.Time)
	}
	for _, tc := range []struct {
		after int64
		limit int
		want  []int64
	}{
		{3, 0, []int64{4, 5, 6, 7, 8, 9, 10}},
		{3, 4, []int64{4, 5, 6, 7}},
		{0, 1, []int64{1}},
		{9, 5, []int64{10}},
		{10, 0, nil},
		{100, 0, nil},
		{0, -1, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{-5, 2, []int64{1, 2}},
	} {
		if got := seqs(events(t, s, "run", tc.after, tc.limit)); !equal(got, tc.want) {
			t.Errorf("Events(after %d, limit %d) = %v, want %v", tc.after, tc.limit, got, tc.want)
		}
	}
}

func testSteps(t *testing.T, h Harness) {
	s := open(t, h)
	r := create(t, s, &store.CreateRunParams{ID: "run"})
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	tr := &store.Transition{RunID: "run", Version: r.Version, Steps: []*store.Step{
		{StepID: "b", Type: "agent", Status: trace.StepRunning, Attempt: 1, StartedAt: t0, Input: json.RawMessage(`{"prompt":"hi"}`)},
		{StepID: "a", Type: "tool", Status: trace.StepRunning, Attempt: 1, StartedAt: t0, Idempotent: true},
	}}
	commit(t, s, tr)
	tr.Steps = []*store.Step{{StepID: "c", Type: "tool", Status: trace.StepWaiting, Attempt: 1, StartedAt: t0.Add(time.Second)}}
	commit(t, s, tr)
	t1 := t0.Add(2 * time.Second)
	tr.Steps = []*store.Step{
		{StepID: "a", Type: "tool", Status: trace.StepSucceeded, Attempt: 2, StartedAt: t0, SettledAt: t1, Idempotent: true, Output: json.RawMessage(`{"ok":true,"n":[1,2]}`), OutputSHA: "given"},
		{StepID: "b", Type: "agent", Status: trace.StepFailed, Attempt: 1, StartedAt: t0, SettledAt: t1, Input: json.RawMessage(`{"prompt":"hi"}`), Error: json.RawMessage(`{"class":"format"}`)},
	}
	commit(t, s, tr)
	st := steps(t, s, "run")
	if got := stepIDs(st); !equal(got, []string{"b", "a", "c"}) {
		t.Fatalf("Steps order = %v, want first-written order [b a c]", got)
	}
	b, a, c := st[0], st[1], st[2]
	for _, x := range st {
		if x.RunID != "run" {
			t.Errorf("step %s: RunID = %q", x.StepID, x.RunID)
		}
	}
	if a.Status != trace.StepSucceeded || a.Attempt != 2 || !a.Idempotent || a.Type != "tool" || !bytes.Equal(a.Output, []byte(`{"ok":true,"n":[1,2]}`)) || a.OutputSHA != "given" {
		t.Errorf("step a = %s", jsonString(a))
	}
	if !near(a.StartedAt, t0) || !near(a.SettledAt, t1) {
		t.Errorf("step a StartedAt %v SettledAt %v, want %v %v", a.StartedAt, a.SettledAt, t0, t1)
	}
	if b.Status != trace.StepFailed || !jsonEqual(b.Error, []byte(`{"class":"format"}`)) || !jsonEqual(b.Input, []byte(`{"prompt":"hi"}`)) || b.Idempotent || len(b.Output) != 0 {
		t.Errorf("step b = %s", jsonString(b))
	}
	if c.Status != trace.StepWaiting || !c.SettledAt.IsZero() || !near(c.StartedAt, t0.Add(time.Second)) {
		t.Errorf("step c = %s", jsonString(c))
	}
	// An upsert replaces the whole projection: a retried step loses its old output.
	tr.Steps = []*store.Step{{StepID: "a", Type: "tool", Status: trace.StepRunning, Attempt: 3, StartedAt: t0}}
	commit(t, s, tr)
	st = steps(t, s, "run")
	if got := stepIDs(st); !equal(got, []string{"b", "a", "c"}) {
		t.Fatalf("Steps order after re-upsert = %v, want [b a c]", got)
	}
	if a := st[1]; a.Status != trace.StepRunning || a.Attempt != 3 || len(a.Output) != 0 || a.OutputSHA != "" || !a.SettledAt.IsZero() || a.Idempotent {
		t.Errorf("re-upserted step a = %s, want the new projection only", jsonString(a))
	}
}

func testBlobs(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	big := bigJSON("big", 2*store.DefaultBlobThreshold+17)
	bigIn := bigJSON("big-input", 3*store.DefaultBlobThreshold)
	small := json.RawMessage(`{"small":true}`)
	r := create(t, s, &store.CreateRunParams{ID: "one"})
	tr := &store.Transition{RunID: "one", Version: r.Version, Steps: []*store.Step{
		{StepID: "big", Status: trace.StepSucceeded, Output: big, Input: bigIn},
		{StepID: "small", Status: trace.StepSucceeded, Output: small},
	}}
	commit(t, s, tr)
	st := steps(t, s, "one")
	if len(st) != 2 {
		t.Fatalf("Steps = %d, want 2", len(st))
	}
	if !bytes.Equal(st[0].Output, big) {
		t.Errorf("large output did not round-trip (%d bytes back of %d)", len(st[0].Output), len(big))
	}
	if st[0].OutputSHA != sha(big) {
		t.Errorf("large output: OutputSHA = %q, want hex sha256 %q", st[0].OutputSHA, sha(big))
	}
	if !bytes.Equal(st[0].Input, bigIn) {
		t.Errorf("large input did not round-trip (%d bytes back of %d)", len(st[0].Input), len(bigIn))
	}
	if !bytes.Equal(st[1].Output, small) {
		t.Errorf("small output = %s", st[1].Output)
	}
	got, err := s.Blob(ctx, sha(big))
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("Blob(sha of the large output) = %d bytes, %v", len(got), err)
	}
	// The same content from another run is the same blob.
	r2 := create(t, s, &store.CreateRunParams{ID: "two"})
	commit(t, s, &store.Transition{RunID: "two", Version: r2.Version, Steps: []*store.Step{{StepID: "x", Status: trace.StepSucceeded, Output: big}}})
	if st := steps(t, s, "two"); len(st) != 1 || st[0].OutputSHA != sha(big) || !bytes.Equal(st[0].Output, big) {
		t.Errorf("second run's large output did not round-trip")
	}
	if got, err := s.Blob(ctx, sha(big)); err != nil || !bytes.Equal(got, big) {
		t.Errorf("Blob after a second store = %d bytes, %v", len(got), err)
	}
}

var seqPattern = func(seq int64) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`\bseq(uence)?[ =:#]*%d\b`, seq))
}

func corruptSetup(t *testing.T, h Harness) store.Store {
	t.Helper()
	if h.CorruptEvent == nil {
		t.Skip("Harness.CorruptEvent is nil")
	}
	s := open(t, h)
	r := create(t, s, &store.CreateRunParams{ID: "run-corrupt"})
	commit(t, s, &store.Transition{RunID: "run-corrupt", Version: r.Version, Events: []*trace.Event{
		event("run-corrupt", 1, trace.RunStarted, ""), event("run-corrupt", 2, trace.StepStarted, "a"), event("run-corrupt", 3, trace.StepSettled, "a"),
	}})
	return s
}

func checkRecordError(t *testing.T, what string, err error, newer bool) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: Events succeeded", what)
	}
	if errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s: err is ErrNotFound: %v", what, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "run-corrupt") || !seqPattern(2).MatchString(msg) {
		t.Errorf("%s: error %q does not name the run (run-corrupt) and the sequence (seq 2)", what, msg)
	}
	if newer && (!strings.Contains(strings.ToLower(msg), "newer") || !strings.Contains(msg, "upgrade rein")) {
		t.Errorf("%s: error %q does not say the record is from a newer rein and to upgrade rein", what, msg)
	}
	if damaged := errors.Is(err, store.ErrDamaged); damaged == newer {
		t.Errorf("%s: error %q: errors.Is(err, store.ErrDamaged) = %v, want %v (a record from a newer rein is not damage; one that does not decode is)",
			what, msg, damaged, !newer)
	}
	var ve *journal.VersionError
	if newer && (!errors.As(err, &ve) || !ve.Newer()) {
		t.Errorf("%s: error %q does not wrap a *journal.VersionError", what, msg)
	}
}

func testCorruptEvent(t *testing.T, h Harness) {
	s := corruptSetup(t, h)
	for _, data := range [][]byte{[]byte(`{"seq":2,"kind":`), []byte("\x00\xffnot json"), []byte(`[1,2,3]`), {}} {
		h.CorruptEvent(t, s, "run-corrupt", 2, store.JournalVersion, data)
		_, err := s.Events(t.Context(), "run-corrupt", 0, 0)
		checkRecordError(t, fmt.Sprintf("record %q", data), err, false)
		// the call records are folded from the events: the damage is theirs too.
		if _, err := s.Calls(t.Context(), "run-corrupt", ""); !errors.Is(err, store.ErrDamaged) {
			t.Errorf("record %q: Calls: err = %v, want store.ErrDamaged", data, err)
		}
	}
	// The records around it still read.
	if got := seqs(events(t, s, "run-corrupt", 2, 0)); !equal(got, []int64{3}) {
		t.Errorf("Events after the corrupt record = %v, want [3]", got)
	}
	if got := seqs(events(t, s, "run-corrupt", 0, 1)); !equal(got, []int64{1}) {
		t.Errorf("Events before the corrupt record = %v, want [1]", got)
	}
}

func testNewerJournalVersion(t *testing.T, h Harness) {
	s := corruptSetup(t, h)
	data, _ := json.Marshal(event("run-corrupt", 2, trace.StepStarted, "a"))
	h.CorruptEvent(t, s, "run-corrupt", 2, store.JournalVersion+1, data)
	_, err := s.Events(t.Context(), "run-corrupt", 0, 0)
	checkRecordError(t, "record of a newer journal version", err, true)
	// Put back at the current version, it reads again.
	h.CorruptEvent(t, s, "run-corrupt", 2, store.JournalVersion, data)
	if got := seqs(events(t, s, "run-corrupt", 0, 0)); !equal(got, []int64{1, 2, 3}) {
		t.Errorf("Events after restoring the record = %v", got)
	}
}

// A first transition with Create makes the run and applies itself to it.
func testCommitCreates(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := t.Context()
	params := func(id string) *store.CreateRunParams {
		return &store.CreateRunParams{ID: id, Flow: "f", FlowHash: "sha256:f", FlowText: []byte("name: f\n"),
			Input: json.RawMessage(`{"a":1}`), Status: trace.RunRunning, Owner: "me", LeaseTTL: time.Minute}
	}
	tr := &store.Transition{RunID: "made", Create: params("made"), Now: past,
		Events: []*trace.Event{event("made", 1, trace.RunStarted, ""), event("made", 2, trace.StepStarted, "a")},
		Steps:  []*store.Step{{StepID: "a", Status: trace.StepRunning, Attempt: 1}}}
	commit(t, s, tr)
	if tr.Version != 1 {
		t.Errorf("version after the creating commit = %d, want 1", tr.Version)
	}
	r, err := s.GetRun(ctx, "made")
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != 1 || r.LastSeq != 2 || r.Status != trace.RunRunning || r.LeaseOwner != "me" || string(r.FlowText) != "name: f\n" || string(r.Input) != `{"a":1}` {
		t.Errorf("created run = %+v", r)
	}
	// the run is created, and leased, at the transition's Now.
	expiresAt(t, "created run", r.LeaseExpires, past.Add(time.Minute))
	if !r.CreatedAt.Equal(past) {
		t.Errorf("created run: CreatedAt %v, want the transition's Now %v", r.CreatedAt, past)
	}
	if got := seqs(events(t, s, "made", 0, 0)); !equal(got, []int64{1, 2}) {
		t.Errorf("events = %v", got)
	}
	if st := steps(t, s, "made"); len(st) != 1 || st[0].Status != trace.StepRunning {
		t.Errorf("steps = %+v", st)
	}
	// The run goes on with ordinary commits.
	commit(t, s, &store.Transition{RunID: "made", Version: tr.Version, Events: []*trace.Event{event("made", 3, trace.StepSettled, "a")}})

	// An ID that exists is a conflict, and nothing of the transition lands.
	again := &store.Transition{RunID: "made", Create: params("made"), Now: past, Events: []*trace.Event{event("made", 1, trace.RunStarted, "")}}
	if err := s.Commit(ctx, again); !errors.Is(err, store.ErrConflict) {
		t.Errorf("creating commit of an existing run: %v, want ErrConflict", err)
	}
	if got := seqs(events(t, s, "made", 0, 0)); !equal(got, []int64{1, 2, 3}) {
		t.Errorf("events after the refused create = %v", got)
	}
	// Bad requests are refused before anything is written.
	for name, bad := range map[string]*store.Transition{
		"idempotency key": {RunID: "k", Create: &store.CreateRunParams{ID: "k", Flow: "f", IdempotencyKey: "x"}},
		"version 1":       {RunID: "v", Version: 1, Create: params("v")},
		"other run ID":    {RunID: "w", Create: params("other")},
	} {
		if err := s.Commit(ctx, bad); err == nil {
			t.Errorf("%s: creating commit accepted", name)
		}
	}
	// A creating commit whose transition fails in the database (two
	// approvals under one ID) leaves no run behind: the run and its first
	// transition are one transaction.
	dup := &store.Transition{RunID: "torn", Create: params("torn"), Events: []*trace.Event{event("torn", 1, trace.RunStarted, "")},
		Approvals: []*store.Approval{{ID: "same", StepID: "a", Kind: store.KindApproval}, {ID: "same", StepID: "b", Kind: store.KindApproval}}}
	if err := s.Commit(ctx, dup); err == nil {
		t.Error("creating commit with two approvals under one ID accepted")
	} else if strings.Contains(err.Error(), "run exists") {
		t.Errorf("creating commit with two approvals under one ID: %v; the run does not exist", err)
	}
	for _, id := range []string{"k", "v", "w", "other", "torn"} {
		if _, err := s.GetRun(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("run %s after a refused creating commit: %v, want ErrNotFound", id, err)
		}
	}
}
