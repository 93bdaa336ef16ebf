package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
)

// TestWorkerStore: rein worker opens its run store from --store, --db (the
// local commands' name for it) or $REIN_DB, a SQLite file created where it
// names; one that does not open is bad usage (exit 2) before the worker
// dials Temporal, and its password is never printed.
func TestWorkerStore(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--store", filepath.Join(dir, "a.db")}, "", filepath.Join(dir, "a.db")},
		{[]string{"--db", filepath.Join(dir, "b.db")}, "", filepath.Join(dir, "b.db")},
		{nil, filepath.Join(dir, "c.db"), filepath.Join(dir, "c.db")},
	} {
		t.Setenv("REIN_DB", c.env)
		var sf storeFlag
		fs := flag.NewFlagSet("worker", flag.ContinueOnError)
		sf.add(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		st, dsn, err := sf.open(context.Background())
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(c.want); err != nil || dsn != c.want {
			t.Errorf("%v (REIN_DB %q): store %s, %v; want the file %s", c.args, c.env, dsn, err, c.want)
		}
	}

	t.Setenv("REIN_DB", "")
	var stderr bytes.Buffer
	bad := "postgres://rein:hunter2@127.0.0.1:1/rein?connect_timeout=2"
	code := Main(context.Background(), []string{"worker", "--temporal", "127.0.0.1:1", "--store", bad, dir}, &bytes.Buffer{}, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "--store postgres://rein:") || strings.Contains(stderr.String(), "hunter2") {
		t.Errorf("a store that does not open: exit %d, %s", code, stderr.String())
	}
	var sf storeFlag
	sf.dsn = bad
	if _, _, err := sf.open(context.Background()); !errors.As(err, new(*usageError)) {
		t.Errorf("open %s: %v, want a usage error", bad, err)
	}
}

// TestWorkerServesExamples: a worker serves every folder of examples/,
// the process clerk too, whose tool is a workflow (served over the
// worker's run store); the command that starts the clerk's run loads it
// with its workflow tool declared, not served, and pins the same flow.
func TestWorkerServesExamples(t *testing.T) {
	var sf storeFlag
	sf.dsn = filepath.Join(t.TempDir(), "rein.db")
	st, _, err := sf.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	examples, err := filepath.Abs(filepath.Join("..", "..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	flows, err := loadFlows([]string{examples}, st)
	if err != nil {
		t.Fatalf("rein worker examples/: %v", err)
	}
	if names := strings.Join(flows.Names(), " "); !strings.Contains(names, "clerk") || !strings.Contains(names, "resume_screen") {
		t.Errorf("the worker serves %s", names)
	}
	p, err := project.LoadAgent(filepath.Join(examples, "process-clerk"), declared())
	if err != nil {
		t.Fatalf("rein agent examples/process-clerk --temporal loads it: %v", err)
	}
	defer p.Close()
	if !flows.Holds(engine.FlowHash(p.Flow)) {
		t.Errorf("the worker does not hold the flow the command pins (%s)", flows.Names())
	}
	wt, ok := p.Tools.Lookup("process_workflow")
	if !ok {
		t.Fatal("the declared workflow tool is not registered")
	}
	if _, err := wt.Call(context.Background(), map[string]any{"action": "status"}); err == nil || !strings.Contains(err.Error(), "a worker that serves the flow calls it") {
		t.Errorf("a declared workflow tool's call: %v", err)
	}
}
