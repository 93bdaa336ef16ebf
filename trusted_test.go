package rein_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
)

// TestTrustedToolsOnly checks LoadOptions.TrustedToolsOnly: Load refuses a
// flow that declares tools of its own, and so does LoadRun (what resume and
// the worker use) for a run whose pinned flow declares them.
func TestTrustedToolsOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "flow.yaml")
	src := "name: own\ntools:\n  hello: {command: [sh, -c, 'cat >/dev/null; echo 1'], effect: none}\nsteps:\n  - {id: a, tool: hello, args: {}}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	const refused = "flow.yaml:2:1: the flow declares tools: of its own, and only trusted tools are allowed"
	if _, err := project.Load(path, &project.LoadOptions{TrustedToolsOnly: true}); err == nil || !strings.Contains(err.Error(), refused) {
		t.Fatalf("Load = %v", err)
	}
	p, err := project.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := openStore(ctx, filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := clientOf(&engine.Config{Store: st}).Enqueue(ctx, p, map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := project.LoadRun(ctx, st, id, &project.LoadOptions{TrustedToolsOnly: true}); err == nil || !strings.Contains(err.Error(), refused) {
		t.Fatalf("LoadRun = %v", err)
	}
	if _, err := project.LoadRun(ctx, st, id, nil); err != nil {
		t.Fatalf("LoadRun without the option: %v", err)
	}
}
