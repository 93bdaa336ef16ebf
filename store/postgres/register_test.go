package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/reinhq/rein/store"
)

// keywordDSN writes the test server's DSN in libpq's keyword/value form,
// every value single-quoted (a quote or backslash escaped), with extra
// settings appended.
func keywordDSN(t *testing.T, password string, extra ...string) string {
	t.Helper()
	cfg, err := pgconn.ParseConfig(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'" }
	parts := []string{
		"host=" + q(cfg.Host), fmt.Sprintf("port=%d", cfg.Port), "user=" + q(cfg.User),
		"password=" + q(password), "dbname=" + q(cfg.Database), "sslmode=disable",
	}
	return strings.Join(append(parts, extra...), " ")
}

// A libpq keyword/value DSN reaches PostgreSQL through store.Open — it
// once made a SQLite file named after the password — and a wrong password
// in one is refused without being repeated.
func TestOpenKeywordDSN(t *testing.T) {
	t.Parallel()
	schema := testSchema(t)
	conn := admin(t)
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgconn.ParseConfig(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	dsn := keywordDSN(t, cfg.Password, "search_path="+schema, "application_name="+schema)
	if s, err := store.SchemeOf(dsn); err != nil || s != store.SchemePostgres {
		t.Fatalf("SchemeOf(the keyword DSN) = %q, %v; want postgres", s, err)
	}
	st, err := store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("store.Open(a keyword DSN): %v", err)
	}
	defer st.Close()
	if _, ok := st.(*Store); !ok {
		t.Fatalf("store.Open gave a %T, want the PostgreSQL store", st)
	}
	if _, _, err := st.CreateRun(t.Context(), &store.CreateRunParams{ID: "kw1", Flow: "f", FlowHash: "h"}); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM "+pgx.Identifier{schema, "rein_runs"}.Sanitize()+" WHERE id = 'kw1'").Scan(&n); err != nil || n != 1 {
		t.Errorf("run kw1 in schema %s: %d rows, %v; want 1", schema, n, err)
	}

	const wrong = "wrong pass'word"
	_, err = store.Open(t.Context(), keywordDSN(t, wrong, "connect_timeout=5"))
	if err == nil {
		t.Fatal("store.Open with a wrong password succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, "wrong pass") || strings.Contains(msg, "pass'word") {
		t.Errorf("the error repeats the password: %s", msg)
	} else if !strings.Contains(msg, "password authentication failed") {
		t.Errorf("a wrong password in a keyword DSN: %s; want the server's refusal", msg)
	}
}
