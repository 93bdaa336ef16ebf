package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
)

// This test binary imports store/sqlite and not store/postgres: what a
// program that links only SQLite gets.

func TestOpenSQLiteForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct{ dsn, path string }{
		{dsn: ":memory:", path: ":memory:"},
		{dsn: filepath.Join(dir, "new", "folder", "runs.db") + "?checkpoint=external&synchronous=full", path: filepath.Join(dir, "new", "folder", "runs.db")},
		{dsn: "file:" + filepath.Join(dir, "a.db"), path: filepath.Join(dir, "a.db")},
		{dsn: "sqlite://" + filepath.Join(dir, "b c.db"), path: filepath.Join(dir, "b c.db")},
		{dsn: "file://localhost" + filepath.Join(dir, "d%20e.db"), path: filepath.Join(dir, "d e.db")},
		{dsn: "sqlite::memory:", path: ":memory:"},
	} {
		st, err := store.Open(t.Context(), c.dsn)
		if err != nil {
			t.Errorf("Open(%q): %v", c.dsn, err)
			continue
		}
		if got := st.(*sqlite.Store).Path(); got != c.path {
			t.Errorf("Open(%q) opened %q, want %q", c.dsn, got, c.path)
		}
		if c.path != ":memory:" {
			if _, err := os.Stat(c.path); err != nil {
				t.Errorf("Open(%q) made no file: %v", c.dsn, err)
			}
		}
		st.Close()
	}
	for _, c := range []struct{ dsn, err string }{
		{dsn: "", err: "empty DSN"},
		{dsn: filepath.Join(dir, "x.db") + "?checkpoints=external", err: `unknown parameter "checkpoints"`},
		{dsn: "file://db.example.com/x.db", err: `host "db.example.com"`},
	} {
		if _, err := store.Open(t.Context(), c.dsn); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Open(%q): %v, want an error saying %q", c.dsn, err, c.err)
		}
	}
}

// A DSN whose driver the program does not import is an error naming the
// import to add (or, for a scheme no backend of rein's has, what rein
// accepts), never a SQLite file, and never the password.
func TestOpenWithoutItsDriver(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []struct{ dsn, want string }{
		{"postgres://rein:Hunter2@127.0.0.1:1/rein", `add import _ "github.com/reinhq/rein/store/postgres"`},
		{"postgresql://rein:Hunter2@127.0.0.1:1/rein", `add import _ "github.com/reinhq/rein/store/postgres"`},
		{"host=127.0.0.1 port=1 user=rein password=Hunter2 dbname=rein", `keyword/value DSN (PostgreSQL): no store driver in this program: add import _ "github.com/reinhq/rein/store/postgres"`},
		{"mysql://rein:Hunter2@db/rein", `no store driver for scheme "mysql" in this program (it has: `},
		{"host=db password=Hunter2 Tail", "does not parse"},
		{" postgres://rein:Hunter2@db/rein", "spaces around it"},
	} {
		_, err := store.Open(t.Context(), c.dsn)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q): %v, want an error saying %s", c.dsn, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "Hunter2") {
			t.Errorf("Open(%q): the error shows the password: %v", c.dsn, err)
		}
		if c.want != "does not parse" && c.want != "spaces around it" && !errors.Is(err, store.ErrNoDriver) {
			t.Errorf("Open(%q): %v does not wrap ErrNoDriver", c.dsn, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Open made %v in the working folder", ents)
	}
}

var registerRuns atomic.Int64

// A driver registered for a scheme gets the DSN as given; Register
// refuses a second driver for a scheme, a nil one and a non-scheme.
func TestRegister(t *testing.T) {
	t.Parallel()
	// a scheme of this run's own: the registry is the process's, and
	// go test -count=N runs this N times in one process.
	n := registerRuns.Add(1)
	scheme := fmt.Sprintf("rein-test%d+x", n)
	var got string
	store.Register(fmt.Sprintf("Rein-Test%d+X", n), func(ctx context.Context, dsn string) (store.Store, error) {
		got = dsn
		return sqlite.Open(ctx, ":memory:", nil)
	})
	if !slices.Contains(store.Schemes(), scheme) || !slices.Contains(store.Schemes(), store.SchemeFile) {
		t.Errorf("Schemes() = %v, want %s and file among them", store.Schemes(), scheme)
	}
	for _, dsn := range []string{scheme + "://anything?at=all", strings.ToUpper(scheme) + ":opaque"} {
		st, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		st.Close()
		if got != dsn {
			t.Errorf("the opener got %q, want %q", got, dsn)
		}
	}
	nop := func(context.Context, string) (store.Store, error) { return nil, nil }
	for _, c := range []struct {
		scheme string
		open   store.Opener
		want   string
	}{
		{scheme, nop, "twice"},
		{"FILE", nop, "twice"},
		{"rein-test-nil", nil, "nil"},
		{"x", nop, "not a URL scheme"},
		{"", nop, "not a URL scheme"},
		{"1db", nop, "not a URL scheme"},
		{"my db", nop, "not a URL scheme"},
		{"db:x", nop, "not a URL scheme"},
	} {
		func() {
			defer func() {
				r, _ := recover().(string)
				if !strings.Contains(r, c.want) {
					t.Errorf("Register(%q): panic %q, want one saying %q", c.scheme, r, c.want)
				}
			}()
			store.Register(c.scheme, c.open)
		}()
	}
}
