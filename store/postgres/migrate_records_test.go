package postgres

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/internal/frames"
	"github.com/reinhq/rein/trace"
)

// TestMigrateSchema4Frames writes runs the way schema 4 stored them (one
// rein_journal row of frames per transition), opens the schema with this
// binary, and checks that migration 5 turned every record into a row of
// rein_records that reads back the same — events with every field, call
// records, the last record of each step, byte-exact payloads — that a
// damaged record stays damage of its run and seq (store.ErrDamaged), and
// that the runs carry on from their versions.
func TestMigrateSchema4Frames(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema, pool := oldSchema(t, 4)
	at := time.Date(2026, 11, 3, 4, 5, 6, 123456789, time.UTC)
	call := &journal.Call{StepID: "fetch", Key: "r1/fetch/1", Item: -1, Attempt: 1, Kind: journal.CallTool, Name: "http_get",
		ArgsSHA: "ab12", Status: journal.CallSucceeded, Output: json.RawMessage(`{"status":200}`)}
	first := []*journal.Event{
		{Seq: 1, Time: at, Kind: trace.RunStarted, Flow: "f", Data: `{"note":"é"}`},
		{Seq: 2, Time: at, Kind: trace.StepStarted, StepID: "fetch", Attempt: 1},
		{Seq: 3, Kind: trace.CallRecorded, StepID: "fetch", Call: call},
	}
	second := []*journal.Event{{Seq: 4, Time: at.Add(time.Second), Kind: trace.StepSettled, StepID: "fetch", Status: "succeeded", OutputSHA: "cd34"}}
	running := &journal.Step{StepID: "fetch", Type: "tool", Status: trace.StepRunning, Attempt: 1, Input: json.RawMessage(`{"url": "x"}`), StartedAt: at}
	done := *running
	done.Status, done.Output, done.OutputSHA, done.SettledAt = trace.StepSucceeded, json.RawMessage(`{"status": 200,  "ü": []}`), "cd34", at.Add(time.Second)
	row := func(evs []*journal.Event, steps ...*journal.Step) (events, stepFrames []byte) {
		var scratch []byte
		for _, e := range evs {
			events, scratch = frames.EncodeEvent(events, scratch, e)
		}
		for _, st := range steps {
			stepFrames, scratch, _ = frames.EncodeStep(stepFrames, scratch, st, -1)
		}
		return events, stepFrames
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO rein_runs (id, flow, status) VALUES ('r1', 'f', 'running'), ('r2', 'f', 'running'), ('r3', 'f', 'running')`)
	ev1, st1 := row(first, running)
	ev2, st2 := row(second, &done)
	exec(`INSERT INTO rein_journal (run_id, version, seq, events, steps) VALUES ('r1', 1, 3, $1, $2), ('r1', 2, 3, NULL, NULL), ('r1', 3, 4, $3, $4)`,
		ev1, st1, ev2, st2)
	// r2: its seq 2 does not decode (not JSON); r3: a row cut short.
	bad := frames.AppendEvent(nil, 1, []byte(`{"kind":"run_started"}`))
	bad = frames.AppendEvent(bad, 2, []byte("{\"kind\":\x00\xff"))
	exec(`INSERT INTO rein_journal (run_id, version, seq, events) VALUES ('r2', 1, 2, $1), ('r3', 1, 7, $2)`, bad, ev1[:len(ev1)-3])
	pool.Close()

	s := openTest(t, schema, nil)
	defer s.Close()
	evs, err := s.Events(ctx, "r1", 0, 0)
	if err != nil || len(evs) != 4 {
		t.Fatalf("Events(r1) = %d events, %v; want 4", len(evs), err)
	}
	for i, want := range append(first, second...) {
		w := *want
		w.RunID = "r1"
		got, _ := json.Marshal(evs[i])
		exp, _ := json.Marshal(&w)
		if string(got) != string(exp) {
			t.Errorf("event %d = %s\nwant %s", i+1, got, exp)
		}
	}
	calls, err := s.Calls(ctx, "r1", "")
	if err != nil || len(calls) != 1 || calls[0].Key != call.Key || calls[0].Name != "http_get" {
		t.Errorf("Calls(r1) = %+v, %v", calls, err)
	}
	steps, err := s.Steps(ctx, "r1")
	if err != nil || len(steps) != 1 {
		t.Fatalf("Steps(r1) = %d steps, %v; want 1", len(steps), err)
	}
	if st := steps[0]; st.Status != trace.StepSucceeded || string(st.Output) != string(done.Output) || string(st.Input) != `{"url": "x"}` ||
		!st.StartedAt.Equal(at) || !st.SettledAt.Equal(done.SettledAt) || st.OutputSHA != "cd34" {
		t.Errorf("step fetch = %+v (output %s)", st, st.Output)
	}
	r1, err := s.GetRun(ctx, "r1")
	if err != nil || r1.Version != 3 || r1.LastSeq != 4 {
		t.Fatalf("migrated run r1 = %+v, %v; want version 3, last seq 4", r1, err)
	}
	for _, tc := range []struct{ run, seq string }{{"r2", "seq 2"}, {"r3", "seq 7"}} {
		_, err := s.Events(ctx, tc.run, 0, 0)
		if !errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), tc.run) || !strings.Contains(err.Error(), tc.seq) {
			t.Errorf("Events(%s) of a damaged record: err = %v, want ErrDamaged naming %s %s", tc.run, err, tc.run, tc.seq)
		}
	}
	if evs, err := s.Events(ctx, "r2", 0, 1); err != nil || len(evs) != 1 || evs[0].Kind != trace.RunStarted {
		t.Errorf("Events(r2) before its damaged record = %v, %v", evs, err)
	}
	var frameCols int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema = $1
		AND table_name = 'rein_journal' AND column_name IN ('events', 'steps')`, schema).Scan(&frameCols); err != nil || frameCols != 0 {
		t.Errorf("rein_journal keeps %d frame columns (%v), want none", frameCols, err)
	}
	next := &store.Transition{RunID: "r1", Version: 3, Events: []*trace.Event{{Seq: 5, Kind: trace.RunSettled, Status: "succeeded"}},
		Run: &store.RunUpdate{Status: trace.RunSucceeded}}
	if err := s.Commit(ctx, next); err != nil {
		t.Fatalf("Commit after the migration: %v", err)
	}
	if evs, err := s.Events(ctx, "r1", 4, 0); err != nil || len(evs) != 1 || evs[0].Seq != 5 {
		t.Errorf("Events(r1) after the next commit = %v, %v", evs, err)
	}
}
