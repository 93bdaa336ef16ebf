package postgres

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// A schema of version 3 gets the ID-prefix and session indexes when it
// opens, and ListRuns by ID prefix (rein runs show 01a2…) and by session
// (rein chat --session) search them: in the generic plan a prepared
// statement settles on, whatever the prefix or session.
func TestListRunsLookupsUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema, pool := oldSchema(t, 3)
	defer pool.Close()
	// 20,000 runs with random-looking IDs; one in ten has a session, of 50.
	if _, err := pool.Exec(ctx, `INSERT INTO rein_runs (id, flow, status, session)
		SELECT md5(i::text), 'f', 'succeeded', CASE WHEN i % 10 = 0 THEN 's' || (i % 50) ELSE '' END
		FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}

	s := openTest(t, schema, nil)
	defer s.Close()
	if _, err := pool.Exec(ctx, `ANALYZE rein_runs`); err != nil {
		t.Fatal(err)
	}
	want := md5Hex("4242")
	got, err := s.ListRuns(ctx, &store.ListRunsParams{IDPrefix: want[:8], Limit: 5})
	if err != nil || len(got) != 1 || got[0].ID != want {
		t.Fatalf("ListRuns(prefix %s) = %v, %v; want %s", want[:8], got, err, want)
	}
	got, err = s.ListRuns(ctx, &store.ListRunsParams{Session: "s20", Limit: 500})
	if err != nil || len(got) != 400 {
		t.Fatalf("ListRuns(session s20) = %d runs, %v; want 400", len(got), err)
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		p     store.ListRunsParams
		index string
	}{
		{store.ListRunsParams{IDPrefix: "01a2", Limit: 11}, "rein_runs_id_prefix"},
		{store.ListRunsParams{IDPrefix: "01a2", Status: trace.RunWaiting, Limit: 11}, "rein_runs_id_prefix"},
		{store.ListRunsParams{Session: "s7", Limit: 20}, "rein_runs_session"},
		{store.ListRunsParams{Session: "s7", Flow: "f", Limit: 20}, "rein_runs_session"},
	} {
		sql, args := listRunsSQL(&tc.p)
		name := pgx.Identifier{"list_runs_" + string(rune('a'+i))}.Sanitize()
		if _, err := conn.Exec(ctx, "PREPARE "+name+" AS "+sql); err != nil {
			t.Fatalf("prepare %s: %v", sql, err)
		}
		params := make([]string, len(args)) // EXECUTE takes literals
		for j, a := range args {
			if s, ok := a.(string); ok {
				params[j] = "'" + strings.ReplaceAll(s, "'", "''") + "'"
			} else {
				params[j] = fmt.Sprint(a)
			}
		}
		rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+name+"("+strings.Join(params, ", ")+")")
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(plan, func(line string) bool { return strings.Contains(line, "Index") && strings.Contains(line, tc.index) }) {
			t.Errorf("ListRuns(%+v) does not use %s:\n%s", tc.p, tc.index, strings.Join(plan, "\n"))
		}
	}
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
