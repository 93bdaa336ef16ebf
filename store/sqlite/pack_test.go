package sqlite

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// rowForms returns, per journal row of the run in order, whether it is
// packed, checking that a packed row's steps column is NULL.
func rowForms(t *testing.T, s *Store, runID string) []bool {
	t.Helper()
	rows, err := s.rdb.Query(`SELECT events, steps FROM journal WHERE rk = (SELECT rk FROM runs WHERE id = ?) ORDER BY id`, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []bool
	for rows.Next() {
		var events, steps []byte
		if err := rows.Scan(&events, &steps); err != nil {
			t.Fatal(err)
		}
		if isPacked(events) && steps != nil {
			t.Errorf("run %s: a packed row keeps %d bytes in steps", runID, len(steps))
		}
		out = append(out, isPacked(events))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A transition like a W5 step's is packed, a small one is not, and both
// read back exactly as committed, through Events and Steps, before and
// after a reopen.
func TestPackedRowsReadBack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	s := openFile(t, path, nil)
	const id = "run-packed"
	if _, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: id, Flow: "f"}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 4, 8, 0, 0, 123456789, time.UTC)
	sha := strings.Repeat("ab", 32)
	output := []byte(`{"id":"c-42","name":"Zhang","ok":true,"score":43,"tags":["go","sql"]}`)
	big := &store.Transition{RunID: id, Version: 0,
		Events: []*trace.Event{
			{Seq: 1, Time: at, Kind: trace.StepSettled, RunID: id, StepID: "s1", StepType: "tool", Attempt: 1,
				Status: "succeeded", OutputSHA: sha, Preview: string(output)},
			{Seq: 2, Time: at.Add(time.Microsecond), Kind: trace.StepStarted, RunID: id, StepID: "s2", StepType: "tool",
				Attempt: 1, Status: "running", Tool: "enrich", InputSHA: sha},
		},
		Steps: []*store.Step{
			{StepID: "s1", Type: "tool", Status: trace.StepSucceeded, Attempt: 1, Output: output, OutputSHA: sha,
				Idempotent: true, StartedAt: at.Add(-time.Millisecond), SettledAt: at},
			{StepID: "s2", Type: "tool", Status: trace.StepRunning, Attempt: 1, Input: output, StartedAt: at.Add(time.Microsecond)},
		}}
	small := &store.Transition{RunID: id,
		Events: []*trace.Event{{Seq: 3, Time: at, Kind: trace.StepSettled, RunID: id, StepID: "s2", Status: "failed"}}}
	if err := s.Commit(t.Context(), big); err != nil {
		t.Fatal(err)
	}
	small.Version = big.Version
	if err := s.Commit(t.Context(), small); err != nil {
		t.Fatal(err)
	}
	if got := rowForms(t, s, id); !reflect.DeepEqual(got, []bool{true, false}) {
		t.Fatalf("rows packed: %v; want [true false] (the W5-like row packed, the small one plain)", got)
	}
	wantEvents := append(append([]*trace.Event{}, big.Events...), small.Events...)
	for reopened := range 2 {
		evs, err := s.Events(t.Context(), id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != len(wantEvents) {
			t.Fatalf("Events = %d events, want %d", len(evs), len(wantEvents))
		}
		for i, e := range evs {
			if !reflect.DeepEqual(e, wantEvents[i]) {
				t.Errorf("reopened %d: event %d = %+v\nwant %+v", reopened, i, e, wantEvents[i])
			}
		}
		if evs, err := s.Events(t.Context(), id, 1, 1); err != nil || len(evs) != 1 || evs[0].Seq != 2 {
			t.Errorf("Events(after 1, limit 1) = %v, %v; want seq 2 alone", evs, err)
		}
		steps, err := s.Steps(t.Context(), id)
		if err != nil || len(steps) != 2 {
			t.Fatalf("Steps = %d, %v", len(steps), err)
		}
		if st := steps[0]; !bytes.Equal(st.Output, output) || st.OutputSHA != sha || !st.Idempotent || !st.SettledAt.Equal(at) {
			t.Errorf("step s1 = %+v", st)
		}
		if st := steps[1]; st.Status != trace.StepRunning || !bytes.Equal(st.Input, output) {
			t.Errorf("step s2 = %+v", st)
		}
		s.Close()
		s = openFile(t, path, nil)
	}
	s.Close()
}

// A packed row that does not decode is an error naming the run, from
// Events and from Steps alike: never a panic, never a guess.
func TestPackedRowDamaged(t *testing.T) {
	t.Parallel()
	s := openFile(t, filepath.Join(t.TempDir(), "rein.db"), nil)
	defer s.Close()
	const id = "run-damaged"
	if _, _, err := s.CreateRun(t.Context(), &store.CreateRunParams{ID: id, Flow: "f"}); err != nil {
		t.Fatal(err)
	}
	tr := &store.Transition{RunID: id, Events: []*trace.Event{{Seq: 1, Kind: trace.StepSettled, RunID: id, StepID: "s1",
		Preview: strings.Repeat("preview ", 64)}}, Steps: []*store.Step{{StepID: "s1", Status: trace.StepSucceeded,
		Output: []byte(`"` + strings.Repeat("out ", 64) + `"`)}}}
	if err := s.Commit(t.Context(), tr); err != nil {
		t.Fatal(err)
	}
	if got := rowForms(t, s, id); !reflect.DeepEqual(got, []bool{true}) {
		t.Fatalf("rows packed: %v; want [true]", got)
	}
	var good []byte
	if err := s.rdb.QueryRow(`SELECT events FROM journal`).Scan(&good); err != nil {
		t.Fatal(err)
	}
	for _, damage := range []struct {
		name string
		row  []byte
	}{
		{"truncated", good[:len(good)-5]},
		{"bad block", []byte{packMark, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3, 4}},
		{"too large", []byte{packMark, 0xff, 0xff, 0xff, 0xff, 0x07, 0}},
		// a block of 10 literal bytes whose split (127) runs past them
		{"bad split", append([]byte{packMark, 10, 9 << 2, 0xff}, make([]byte, 9)...)},
	} {
		if err := s.w.write(t.Context(), func(x *wtx) error {
			_, err := x.exec(`UPDATE journal SET events = ?`, damage.row)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Events(t.Context(), id, 0, 0); err == nil || !strings.Contains(err.Error(), "run "+id) || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("%s: Events error = %v; want one naming the run and the damage", damage.name, err)
		}
		if _, err := s.Steps(t.Context(), id); err == nil || !strings.Contains(err.Error(), "run "+id) || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("%s: Steps error = %v; want one naming the run and the damage", damage.name, err)
		}
	}
}

// pack declines what would not shrink, and unpack undoes pack.
func TestPackRoundTrip(t *testing.T) {
	t.Parallel()
	if _, _, _, ok := pack(nil, nil, []byte("short"), nil); ok {
		t.Error("a row below packMin was packed")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	incompressible := make([]byte, 4*packMin)
	for i := range incompressible {
		incompressible[i] = byte(rng.Uint32())
	}
	if _, _, _, ok := pack(nil, nil, incompressible, nil); ok {
		t.Error("a row that does not shrink was packed")
	}
	if _, _, _, ok := pack(nil, nil, make([]byte, maxUnpacked), nil); ok {
		t.Error("a row larger than unpack accepts was packed")
	}
	ev := bytes.Repeat([]byte(`{"kind":"step_settled"}`), 20)
	st := bytes.Repeat([]byte(`{"status":"succeeded"}`), 20)
	p, dst, scratch, ok := pack(nil, nil, ev, st)
	if !ok || !isPacked(p) || len(p) >= len(ev)+len(st) {
		t.Fatalf("pack = %d bytes, %v; want fewer than %d, packed", len(p), ok, len(ev)+len(st))
	}
	gotEv, gotSt, _, err := unpack("r", p, nil)
	if err != nil || !bytes.Equal(gotEv, ev) || !bytes.Equal(gotSt, st) {
		t.Fatalf("unpack = %q, %q, %v", gotEv, gotSt, err)
	}
	// the buffers are reused: a second pack into them reads back too
	p2, _, _, ok := pack(dst, scratch, st, ev)
	if gotSt, gotEv, _, err = unpack("r", p2, nil); !ok || err != nil || !bytes.Equal(gotEv, ev) || !bytes.Equal(gotSt, st) {
		t.Fatalf("second pack: %v, %v", ok, err)
	}
}
