package engine_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// killedChild runs the test named child of this test binary in a new
// process, with env and REIN_CRASH_DIR set to a fresh folder, and
// requires that it die by SIGKILL (its store kills it at the point the
// case names). It returns the folder and the child's SQLite store,
// reopened and closed when t ends.
func killedChild(t *testing.T, child string, env ...string) (string, *sqlite.Store) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), "REIN_CRASH_DIR="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return dir, st
}

// specsOf answers flow.Options.Tools from reg: the spec of each registered
// tool, and false for a name reg does not hold.
func specsOf(reg *tool.Registry) func(string) (tool.Spec, bool) {
	return func(n string) (tool.Spec, bool) {
		tl, ok := reg.Lookup(n)
		if !ok {
			return tool.Spec{}, false
		}
		return tl.Spec(), true
	}
}

// parkThenDie is the body of a child that runs f with input as run runID
// on the SQLite store in REIN_CRASH_DIR (the engine build makes) until
// the run parks, then dies by SIGKILL. It returns only by failing t.
func parkThenDie(t *testing.T, runID string, input map[string]any, build func(t testing.TB, dir string, st store.Store) (*engine.Engine, *flow.Flow)) {
	dir := os.Getenv("REIN_CRASH_DIR")
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, f := build(t, dir, st)
	res, err := e.Run(context.Background(), f, input, &engine.RunOptions{RunID: runID})
	if err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("the run did not park: %v %+v", err, res)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
