package postgres

import (
	"net/url"
	"testing"
)

// A keyword DSN with pgxpool's pool_max_conns and a search_path opens
// the database/sql pool: pool_max_conns sizes it (and is not sent to the
// server, which would refuse it), search_path puts the tables in its schema.
func TestOpenKeywordDSNPoolSettings(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testDSN(t))
	if err != nil || u.User == nil {
		t.Skipf("the test DSN is not a URL with a user: %v", err)
	}
	pw, _ := u.User.Password()
	schema := testSchema(t)
	admin(t).Exec(t.Context(), "CREATE SCHEMA "+schema) //nolint:errcheck // Open fails below when it is missing
	dsn := "host=" + u.Hostname() + " port=" + u.Port() + " user=" + u.User.Username() + " password=" + pw +
		" dbname=" + u.Path[1:] + " sslmode=disable pool_max_conns=3 search_path=" + schema
	s, err := Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatalf("Open(keyword DSN): %v", err)
	}
	defer s.Close()
	if got := s.db.Stats().MaxOpenConnections; got != 3 {
		t.Errorf("MaxOpenConnections = %d, want 3 (pool_max_conns)", got)
	}
	var n int
	if err := s.db.QueryRowContext(t.Context(), `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = $1 AND table_name = 'rein_records'`, schema).Scan(&n); err != nil || n != 1 {
		t.Errorf("rein_records in schema %s: %d, %v", schema, n, err)
	}
}
