package workflowtool_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/store/sqlite"
)

// openStore opens a SQLite file in a temporary folder.
func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openPostgres opens a schema of its own on the test PostgreSQL, skipping
// without one (failing under CI).
func openPostgres(t *testing.T) store.Store {
	t.Helper()
	dsn := os.Getenv("REIN_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REIN_TEST_POSTGRES_DSN is not set under CI: .ci/run must start PostgreSQL")
		}
		t.Skip(`needs PostgreSQL: eval "$(bash .ci/postgres)" && go test ./bridge -run Postgres`)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	st, err := postgres.Open(context.Background(), dsn, &postgres.Options{Schema: "rein_bridge_" + hex.EncodeToString(rnd[:])})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newWorkflow serves the flow at path on st, delivering under a temporary folder.
func newWorkflow(t *testing.T, path string, st store.Store) *workflowtool.Workflow {
	t.Helper()
	w, err := workflowtool.New(path, &workflowtool.Options{Store: st, DeliveryDir: t.TempDir()})
	if err != nil {
		t.Fatalf("New(%s): %v", path, err)
	}
	return w
}

// do performs one action given as JSON, the way a transport hands it over.
func do(t *testing.T, w *workflowtool.Workflow, req string) (*workflowtool.Answer, *workflowtool.Error) {
	t.Helper()
	a, err := w.Handle(context.Background(), []byte(req))
	if err == nil {
		return a, nil
	}
	var e *workflowtool.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %T %v is no *workflowtool.Error", req, err, err)
	}
	return nil, e
}

// mustDo performs req and fails the test on an error.
func mustDo(t *testing.T, w *workflowtool.Workflow, req string) *workflowtool.Answer {
	t.Helper()
	a, e := do(t, w, req)
	if e != nil {
		raw, _ := json.Marshal(e)
		t.Fatalf("%s: %s", req, raw)
	}
	return a
}

// wantError checks e's class and that it is not nil.
func wantError(t *testing.T, what string, e *workflowtool.Error, class fault.Class) {
	t.Helper()
	if e == nil {
		t.Fatalf("%s: no error, want %s", what, class)
	}
	if e.Type != class {
		raw, _ := json.Marshal(e)
		t.Fatalf("%s: error %s, want class %s", what, raw, class)
	}
}

func nextIDs(a *workflowtool.Answer) []string {
	var ids []string
	for _, n := range a.NextActions {
		ids = append(ids, n.StepID+":"+n.Action)
	}
	return ids
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
