package postgres

import (
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// A run's journal reads with plain SQL, through database/sql and no rein
// decoder: its events' kinds, steps and call keys, a field of an event's
// JSON, its steps' columns and a call record's columns — the views and
// columns of SQLite's (store/sqlite TestStoreReadsWithPlainSQL), queried
// with the same SQL where only JSON paths differ (docs/durability.md
// "Reading the store with SQL").
func TestStoreReadsWithPlainSQL(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := testSchema(t)
	s := openTest(t, schema, nil)
	at := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	call := &store.Call{StepID: "fetch", Key: "run-sql/fetch/1", Item: -1, Attempt: 1, Kind: store.CallTool, Name: "http_get",
		ArgsSHA: "ab12", Status: store.CallSucceeded, Output: json.RawMessage(`{"status":200}`)}
	tr := &store.Transition{RunID: "run-sql", Now: at,
		Create: &store.CreateRunParams{ID: "run-sql", Flow: "sql", FlowHash: "sha256:f", Input: json.RawMessage(`{}`)},
		Events: []*trace.Event{
			{Seq: 1, Time: at, Kind: trace.RunStarted, RunID: "run-sql", Flow: "sql"},
			{Seq: 2, Time: at, Kind: trace.StepStarted, RunID: "run-sql", StepID: "fetch", Attempt: 1},
			{Seq: 3, Time: at, Kind: trace.CallRecorded, RunID: "run-sql", StepID: "fetch", Call: call},
			{Seq: 4, Time: at.Add(time.Millisecond), Kind: trace.StepSettled, RunID: "run-sql", StepID: "fetch", Status: "succeeded",
				OutputSHA: "cd34"},
		},
		Steps: []*store.Step{{StepID: "fetch", Type: "tool", Status: trace.StepSucceeded, Attempt: 1,
			Output: json.RawMessage(`{"status":200}`), OutputSHA: "cd34", SettledAt: at.Add(time.Millisecond)}}}
	if err := s.Commit(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("pgx", withParam(testDSN(t), "search_path", schema))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT seq, kind, coalesce(step_id, ''), coalesce(call_key, ''), at, payload ->> 'output_sha256'
		FROM run_events WHERE run_id = $1 ORDER BY seq`, "run-sql")
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		seq                 int64
		kind, step, callKey string
		at                  int64
		outputSHA           sql.NullString
	}
	var got []ev
	for rows.Next() {
		var e ev
		if err := rows.Scan(&e.seq, &e.kind, &e.step, &e.callKey, &e.at, &e.outputSHA); err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []ev{
		{1, "run_started", "", "", at.UnixNano(), sql.NullString{}},
		{2, "step_started", "fetch", "", at.UnixNano(), sql.NullString{}},
		{3, "call", "fetch", "run-sql/fetch/1", at.UnixNano(), sql.NullString{}},
		{4, "step_settled", "fetch", "", at.Add(time.Millisecond).UnixNano(), sql.NullString{String: "cd34", Valid: true}},
	}
	if len(got) != len(want) {
		t.Fatalf("run_events = %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	var status, output string
	var attempt int
	var settled int64
	if err := db.QueryRowContext(ctx, `SELECT status, attempt, output ->> 'status', settled_at FROM run_steps WHERE run_id = $1 AND step_id = $2`,
		"run-sql", "fetch").Scan(&status, &attempt, &output, &settled); err != nil {
		t.Fatal(err)
	}
	if status != "succeeded" || attempt != 1 || output != "200" || settled != at.Add(time.Millisecond).UnixNano() {
		t.Errorf("run_steps: status %q attempt %d output.status %q settled_at %d", status, attempt, output, settled)
	}

	// the query of SQLite's test, word for word but for its placeholder.
	var key, name, callStatus, args string
	var callAttempt int
	if err := db.QueryRowContext(ctx, `SELECT key, name, status, attempt, args_sha256 FROM run_calls WHERE run_id = $1 ORDER BY seq DESC LIMIT 1`,
		"run-sql").Scan(&key, &name, &callStatus, &callAttempt, &args); err != nil {
		t.Fatal(err)
	}
	if key != call.Key || name != "http_get" || callStatus != "succeeded" || callAttempt != 1 || args != "ab12" {
		t.Errorf("run_calls: key %q name %q status %q attempt %d args %q", key, name, callStatus, callAttempt, args)
	}
}
