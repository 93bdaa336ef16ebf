package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/frames"
	"github.com/reinhq/rein/trace"
)

// pack is how the writer of schemas 3 to 5 packed a row (for building
// old databases in tests): the packed column of a row's frames in dst's
// storage, and ok false when packing would not make the row smaller, or
// the row is larger than unpack accepts. scratch is a buffer for the
// block's input; both are returned for reuse.
func pack(dst, scratch, events, steps []byte) (packed, dstBuf, scratchBuf []byte, ok bool) {
	plain := len(events) + len(steps)
	if plain < packMin || plain+binary.MaxVarintLen64 > maxUnpacked {
		return nil, dst, scratch, false
	}
	in := binary.AppendUvarint(scratch[:0], uint64(len(events)))
	in = append(append(in, events...), steps...)
	n := 1 + s2.MaxEncodedLen(len(in))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	dst[0] = packMark
	out := dst[:1+len(s2.Encode(dst[1:], in))]
	if len(out) >= plain {
		return nil, dst, in, false
	}
	return out, dst, in, true
}

// packMin is the size of frames below which the old writer stored a row
// plain.
const packMin = 256

// oldStore writes a database of schema 5, whose journal is one row of
// frames per transition, some packed, as the writer of schemas 3 to 5 did.
type oldStore struct {
	t  *testing.T
	db *sql.DB
}

func newOldStore(t *testing.T, path string) *oldStore {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:5] {
		if _, err := db.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	if _, err := db.Exec(`PRAGMA user_version = 5`); err != nil {
		t.Fatal(err)
	}
	return &oldStore{t, db}
}

// run creates a run and returns its rk.
func (o *oldStore) run(id string) int64 {
	var rk int64
	if err := o.db.QueryRow(`INSERT INTO runs (id, flow, status, created_at, updated_at) VALUES (?, 'f', 'running', 1, 1) RETURNING rk`,
		id).Scan(&rk); err != nil {
		o.t.Fatal(err)
	}
	return rk
}

// commit appends tr as one journal row, packed when that is smaller; it
// returns the row's events column as stored.
func (o *oldStore) commit(rk, version int64, tr *store.Transition) []byte {
	var events, steps, scratch []byte
	seq := int64(0)
	for _, e := range tr.Events {
		events, scratch = frames.EncodeEvent(events, scratch, e)
		seq = e.Seq
	}
	for _, st := range tr.Steps {
		steps, scratch, _ = frames.EncodeStep(steps, scratch, st, store.DefaultBlobThreshold)
	}
	var stepsCol any = steps
	if p, _, _, ok := pack(nil, nil, events, steps); ok {
		events, stepsCol = p, nil
	}
	if _, err := o.db.Exec(`INSERT INTO journal (rk, version, seq, at, events, steps) VALUES (?, ?, ?, ?, ?, ?)`,
		rk, version, seq, time.Now().UnixNano(), events, stepsCol); err != nil {
		o.t.Fatal(err)
	}
	return events
}

// Opening a database of schema 5 converts its journal — packed and plain
// rows of frames — into rows of events and steps, which read back exactly
// as committed, through Events, Steps and plain SQL; a row that does not
// decode stays an error of its run alone, naming the run and the damage.
func TestMigrationConvertsJournal(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rein.db")
	old := newOldStore(t, path)
	const id = "run-packed"
	rk := old.run(id)
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
		Events: []*trace.Event{{Seq: 3, Time: at, Kind: trace.CallRecorded, RunID: id, StepID: "s2",
			Call: &store.Call{StepID: "s2", Key: "run-packed/s2/1", Item: -1, Attempt: 1, Kind: store.CallTool, Name: "enrich",
				Status: store.CallSucceeded}}}}
	if !isPacked(old.commit(rk, 1, big)) || isPacked(old.commit(rk, 2, small)) {
		t.Fatal("the W5-like row was not packed, or the small one was")
	}
	const damagedID = "run-damaged"
	good := old.commit(old.run(damagedID), 1, &store.Transition{Events: []*trace.Event{{Seq: 1, Kind: trace.StepSettled, StepID: "s1",
		Preview: strings.Repeat("preview ", 64)}}})
	if _, err := old.db.Exec(`UPDATE journal SET events = ? WHERE rk = (SELECT rk FROM runs WHERE id = ?)`, good[:len(good)-5], damagedID); err != nil {
		t.Fatal(err)
	}
	// a run after the damaged one converts as any other.
	const afterID = "run-after"
	old.commit(old.run(afterID), 1, &store.Transition{Events: []*trace.Event{{Seq: 1, Time: at, Kind: trace.StepStarted, StepID: "s1"}},
		Steps: []*store.Step{{StepID: "s1", Status: trace.StepRunning, Attempt: 1}}})
	old.db.Close()

	s := openFile(t, path, nil)
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
		if r, err := s.GetRun(t.Context(), id); err != nil || r.Version != 2 || r.LastSeq != 3 {
			t.Errorf("GetRun = %+v, %v; want version 2, last seq 3", r, err)
		}
		if _, err := s.Events(t.Context(), damagedID, 0, 0); err == nil || !strings.Contains(err.Error(), "run "+damagedID) ||
			!strings.Contains(err.Error(), "damaged") {
			t.Errorf("Events of the damaged run: %v; want an error naming the run and the damage", err)
		}
		if evs, err := s.Events(t.Context(), afterID, 0, 0); err != nil || len(evs) != 1 || evs[0].Kind != trace.StepStarted {
			t.Errorf("Events of the run after the damaged one = %v, %v", evs, err)
		}
		if st, err := s.Steps(t.Context(), afterID); err != nil || len(st) != 1 || st[0].Status != trace.StepRunning {
			t.Errorf("Steps of the run after the damaged one = %v, %v", st, err)
		}
		s.Close()
		s = openFile(t, path, nil)
	}
	defer s.Close()
	var kinds, keys string
	if err := s.rdb.QueryRow(`SELECT group_concat(kind || ':' || coalesce(step_id, ''), ' '), group_concat(call_key)
		FROM (SELECT * FROM run_events WHERE run_id = ? ORDER BY seq)`, id).Scan(&kinds, &keys); err != nil {
		t.Fatal(err)
	}
	if kinds != "step_settled:s1 step_started:s2 call:s2" || keys != "run-packed/s2/1" {
		t.Errorf("run_events: kinds %q, call keys %q", kinds, keys)
	}
	var tables int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name IN ('journal_frames', 'journal_frames_index') OR name LIKE '%frames%'`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("%d of the old journal tables left, %v", tables, err)
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
