package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/storetest"
	"github.com/reinhq/rein/trace"
)

const dsnEnv = "REIN_TEST_POSTGRES_DSN"

// testDSN returns the DSN of the test server. Without one the test skips,
// saying how to start one — unless CI=true, where a skipped PostgreSQL test
// would hide a broken CI setup, so it fails.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(dsnEnv + ` is not set under CI=true: .ci/run must start PostgreSQL (eval "$(.ci/postgres)") before go test`)
		}
		t.Skip(dsnEnv + ` is not set; to run the PostgreSQL tests: eval "$(.ci/postgres)" && go test ./store/postgres/...`)
	}
	return dsn
}

// withParam adds a connection parameter to a URL or key=value DSN.
func withParam(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			q.Set(key, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " " + key + "=" + value
}

// testSchema makes a fresh schema name, dropped (with everything in it)
// when t ends.
func testSchema(t testing.TB) string {
	t.Helper()
	dsn := testDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "rein_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// openTest opens a Store in schema (a fresh one when empty). The
// connections are named schema (application_name), so a test can find and
// kill them. The caller closes it.
func openTest(t testing.TB, schema string, opts *Options) *Store {
	t.Helper()
	if schema == "" {
		schema = testSchema(t)
	}
	o := Options{MaxConns: 4}
	if opts != nil {
		o = *opts
	}
	o.Schema = schema
	s, err := Open(t.Context(), withParam(testDSN(t), "application_name", schema), &o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// admin returns a connection outside any test store, closed when t ends.
func admin(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testDSN(t))
	if err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestConformance(t *testing.T) {
	testDSN(t)
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Store { return openTest(t, "", nil) },
		CorruptEvent: func(t *testing.T, s store.Store, runID string, seq int64, version int, data []byte) {
			corruptEvent(t, s.(*Store), runID, seq, version, data)
		},
		CorruptStep: func(t *testing.T, s store.Store, runID, stepID string, version int, rec []byte) {
			corruptStep(t, s.(*Store), runID, stepID, version, rec)
		},
	})
}

func TestOpenBadDSN(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Pa55"
	ctx := t.Context()
	tests := []struct {
		name, dsn string
		want      []string
	}{
		{"refused URL", "postgres://rein:" + secret + "@127.0.0.1:1/rein?sslmode=disable", []string{"127.0.0.1:1", "cannot connect"}},
		{"refused key=value", "host=127.0.0.1 port=1 user=rein password=" + secret + " dbname=rein sslmode=disable", []string{"127.0.0.1:1", "cannot connect"}},
		{"unparsable URL", "postgres://rein:" + secret + "@127.0.0.1:notaport/rein", []string{"invalid DSN"}},
		{"unparsable key=value", "host=127.0.0.1 password=" + secret + " port=x", []string{"invalid DSN"}},
	}
	if dsn := os.Getenv(dsnEnv); dsn != "" {
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			u.User = url.UserPassword(u.User.Username(), secret)
			tests = append(tests, struct {
				name, dsn string
				want      []string
			}{"wrong password", u.String(), []string{u.Host, "cannot connect"}})
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(ctx, tc.dsn, &Options{ConnectTimeout: 5 * time.Second})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if strings.Contains(msg, secret) {
				t.Errorf("error repeats the password: %s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	schema := testSchema(t)
	s := openTest(t, schema, nil)
	if _, err := s.db.ExecContext(t.Context(), `INSERT INTO rein_schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := Open(t.Context(), testDSN(t), &Options{Schema: schema})
	want := fmt.Sprintf("written by a newer rein (schema 999, this binary knows %d): upgrade rein", SchemaVersion())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open of a newer schema: err = %v, want it to say %q", err, want)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	schema := testSchema(t)
	var wg sync.WaitGroup
	stores := make([]*Store, 6)
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Go(func() {
			stores[i], errs[i] = Open(t.Context(), testDSN(t), &Options{Schema: schema, MaxConns: 2})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	var n, max int
	if err := stores[0].db.QueryRowContext(t.Context(), `SELECT count(*), max(version) FROM rein_schema_migrations`).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != SchemaVersion() || max != SchemaVersion() {
		t.Errorf("rein_schema_migrations holds %d rows up to %d, want %d", n, max, SchemaVersion())
	}
	// Reopening an up-to-date schema applies nothing and works.
	again := openTest(t, schema, nil)
	defer again.Close()
}

// TestCommitLateFailureAppliesNothing fails the last statement of a
// Commit's batch (a duplicate approval ID) and checks that the events,
// run update and steps queued before it were rolled back with it.
func TestCommitLateFailureAppliesNothing(t *testing.T) {
	t.Parallel()
	s := openTest(t, "", nil)
	defer s.Close()
	ctx := t.Context()
	r, _, err := s.CreateRun(ctx, &store.CreateRunParams{ID: "run", Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	tr := &store.Transition{RunID: "run", Version: r.Version,
		Events:    []*trace.Event{{Seq: 1, Kind: trace.RunStarted}, {Seq: 2, Kind: trace.StepStarted, StepID: "a"}},
		Run:       &store.RunUpdate{Status: trace.RunWaiting},
		Steps:     []*store.Step{{StepID: "a", Status: trace.StepWaiting}},
		Approvals: []*store.Approval{{ID: "same", StepID: "a"}, {ID: "same", StepID: "a"}},
	}
	err = s.Commit(ctx, tr)
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Commit with a duplicate approval ID: err = %v, want ErrConflict", err)
	}
	g, _ := s.GetRun(ctx, "run")
	evs, _ := s.Events(ctx, "run", 0, 0)
	st, _ := s.Steps(ctx, "run")
	if g.Version != r.Version || g.Status != trace.RunPending || g.LastSeq != 0 || len(evs) != 0 || len(st) != 0 || tr.Version != r.Version {
		t.Errorf("a failed Commit applied something: version %d status %s last_seq %d, %d events, %d steps, t.Version %d",
			g.Version, g.Status, g.LastSeq, len(evs), len(st), tr.Version)
	}
}

// corruptEvent overwrites the record of (runID, seq) in rein_records with
// version and data. Its payload column is json, which holds only JSON: data
// that is not JSON is stored as the JSON string of its text (a record that
// does not decode all the same), and no data as NULL.
func corruptEvent(t *testing.T, s *Store, runID string, seq int64, version int, data []byte) {
	t.Helper()
	tag, err := s.db.ExecContext(t.Context(), `UPDATE rein_records SET version = $3, payload = $4::json
		WHERE run_id = $1 AND seq = $2 AND kind IS NOT NULL`, runID, seq, version, jsonColumn(data))
	if err != nil {
		t.Fatalf("corrupt event %s seq %d: %v", runID, seq, err)
	}
	if n, err := tag.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("corrupt event %s seq %d: %d rows, %v", runID, seq, n, err)
	}
}

// corruptStep overwrites the record of step stepID in every row of
// rein_records of runID holding one, as corruptEvent does.
func corruptStep(t *testing.T, s *Store, runID, stepID string, version int, rec []byte) {
	t.Helper()
	tag, err := s.db.ExecContext(t.Context(), `UPDATE rein_records SET version = $3, record = $4::json
		WHERE run_id = $1 AND step_id = $2 AND record IS NOT NULL`, runID, stepID, version, jsonColumn(rec))
	if err != nil {
		t.Fatalf("corrupt step %s %s: %v", runID, stepID, err)
	}
	if n, err := tag.RowsAffected(); err != nil || n == 0 {
		t.Fatalf("corrupt step %s %s: %d rows, %v", runID, stepID, n, err)
	}
}

// jsonColumn is data for a json column (jsonText), NULL when empty.
func jsonColumn(data []byte) any {
	if len(data) == 0 {
		return nil
	}
	return jsonText(data)
}
