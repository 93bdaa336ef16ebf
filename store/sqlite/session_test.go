package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/store"
)

// queryPlan returns the details of SQLite's plan for q.
func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// oldFile writes a database of schema upTo, as an older rein did, and
// returns its path and a connection to it, which the caller closes.
func oldFile(t *testing.T, upTo int) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rein.db")
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:upTo] {
		if _, err := raw.Exec(m.sql); err != nil {
			raw.Close()
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", upTo)); err != nil {
		raw.Close()
		t.Fatal(err)
	}
	return path, raw
}

// A database of schema 4 gets the runs_session index when it opens, and
// ListRuns by session (rein chat --session) searches it instead of
// scanning every run.
func TestMigrationIndexesSessions(t *testing.T) {
	t.Parallel()
	path, raw := oldFile(t, 4)
	for i := range 200 {
		session := ""
		if i%50 == 0 {
			session = fmt.Sprint("s", i%100)
		}
		if _, err := raw.Exec(`INSERT INTO runs (id, flow, status, session, created_at, updated_at) VALUES (?, 'f', 'succeeded', ?, 0, 0)`,
			fmt.Sprintf("r%03d", i), session); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()

	s := openFile(t, path, nil)
	got, err := s.ListRuns(t.Context(), &store.ListRunsParams{Session: "s0"})
	if ids := runIDs(got); err != nil || !slices.Equal(ids, []string{"r100", "r000"}) {
		t.Fatalf("ListRuns(session s0) = %v, %v; want r100, r000", ids, err)
	}
	for _, p := range []*store.ListRunsParams{{Session: "s0"}, {Session: "s0", Flow: "f", Limit: 5}, {Session: "s0", Status: "succeeded"}} {
		q, args := listRunsSQL(p)
		plan := queryPlan(t, s.rdb, q, args...)
		if !slices.ContainsFunc(plan, func(d string) bool { return strings.Contains(d, "USING INDEX runs_session") }) {
			t.Errorf("ListRuns(%+v) does not search runs_session:\n%s", *p, strings.Join(plan, "\n"))
		}
	}
}
