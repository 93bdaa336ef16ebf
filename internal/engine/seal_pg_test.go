package engine_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/trace"
)

// On PostgreSQL too, a secret a step returned reaches a later step after
// a resume, and no row of the store's schema holds it in clear.
func TestSealedPayloadsOnPostgres(t *testing.T) {
	dsn := os.Getenv("REIN_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REIN_TEST_POSTGRES_DSN is not set under CI: .ci/run must start PostgreSQL")
		}
		t.Skip(`needs PostgreSQL: eval "$(bash .ci/postgres)"`)
	}
	ctx := context.Background()
	schema := fmt.Sprintf("seal_%d", time.Now().UnixNano())
	st, err := postgres.Open(ctx, dsn, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dir := t.TempDir()
	reg := sealTools(dir, false)
	f, err := flow.Parse([]byte(sealFlow+"  - {id: ok, type: approval, requires: [use]}\n"), "sealed.yaml", &flow.Options{Tools: specsOf(reg)})
	if err != nil {
		t.Fatal(err)
	}
	codec := sealCodec(t, sealKey(t, "k1", 1))
	e := engine.New(engine.Config{Tools: reg, Store: st, Redactor: redact.New(sealSecret), Codec: codec})
	res, err := e.Run(ctx, f, map[string]any{"password": sealSecret}, &engine.RunOptions{RunID: "sealed-pg"})
	if err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("run: %v %+v", err, res)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "sealed-pg", StepID: "ok", Status: store.ApprovalApproved}); err != nil {
		t.Fatal(err)
	}
	if res, err = e.Resume(ctx, f, "sealed-pg"); err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if got := readLines(t, dir+"/use.log"); len(got) != 1 || got[0] != sealUsed {
		t.Fatalf("use was handed %v", got)
	}
	storeHoldsNot(t, st, "sealed-pg", sealSecret)

	// every bytea and text column of every table of the schema, raw.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = $1 AND data_type IN ('bytea', 'text', 'jsonb', 'json', 'character varying')`, schema)
	if err != nil {
		t.Fatal(err)
	}
	type col struct{ table, name, typ string }
	var cols []col
	for rows.Next() {
		var c col
		if err := rows.Scan(&c.table, &c.name, &c.typ); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if rows.Err() != nil || len(cols) == 0 {
		t.Fatalf("no columns in schema %s: %v", schema, rows.Err())
	}
	for _, c := range cols {
		cond := fmt.Sprintf(`position($1::bytea in %q) > 0`, c.name)
		arg := any([]byte(sealSecret))
		if c.typ != "bytea" {
			cond, arg = fmt.Sprintf(`strpos(%q::text, $1) > 0`, c.name), sealSecret
		}
		var n int
		if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %q.%q WHERE %s`, schema, c.table, cond), arg).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Errorf("%s.%s holds the secret in clear in %d rows", c.table, c.name, n)
		}
	}
}
