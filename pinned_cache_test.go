package rein_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// A run's pinned flow is parsed once per process: LoadRun hands every
// Project of the run the same *flow.Flow. A parse that depended on what
// the program answers (a Go tool's effect) is redone when the answer
// changed, and a flow that names a Go tool the program lacks still fails.
func TestLoadRunParsesAPinnedFlowOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	flowText := "name: cached\nsteps:\n  - {id: ask, type: approval}\n  - {id: make, tool: make, args: {}, output_schema: out}\n"
	if err := os.MkdirAll(filepath.Join(dir, "schemas"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"flow.yaml": flowText, "schemas/out.json": `{"type": "object"}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(e tool.Effect) tool.Tool {
		return tool.Func(tool.Spec{Name: "make", Effect: e}, func(context.Context, any) (any, error) { return map[string]any{}, nil })
	}
	opts := &project.LoadOptions{Tools: []tool.Tool{mk(tool.EffectNone)}}
	p, err := project.Load(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStore(ctx, filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if res, err := clientOf(&engine.Config{Store: st}).Start(ctx, p, nil, &engine.RunOptions{RunID: "c"}); err != nil || res.Status != trace.RunWaiting {
		t.Fatalf("start: %v", err)
	}
	load := func(o *project.LoadOptions) *project.Project {
		t.Helper()
		p, err := project.LoadRun(ctx, st, "c", o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	cached := &project.LoadOptions{Tools: opts.Tools, Cache: project.NewCache(0)}
	a, b := load(cached), load(cached)
	if a.Flow != b.Flow {
		t.Error("LoadRun parsed the pinned flow again: want one *flow.Flow per pinned flow and Cache")
	}
	if other := load(&project.LoadOptions{Tools: opts.Tools, Cache: project.NewCache(0)}); other.Flow == a.Flow {
		t.Error("two Caches share a parsed flow: a Cache is an instance, not a process global")
	}
	if bare := load(opts); bare.Flow == a.Flow {
		t.Error("a load without a Cache took a cached flow")
	}
	if a.Tools == b.Tools {
		t.Error("two Projects share a tool registry: only the flow is to be shared")
	}
	// the parse read the tool's effect (retries of a write tool): another
	// answer parses anew, and the flow differs where it reads it.
	c := load(&project.LoadOptions{Tools: []tool.Tool{mk(tool.EffectWrite)}, Cache: cached.Cache})
	if c.Flow == a.Flow {
		t.Error("a Go tool's effect changed, and LoadRun answered the flow parsed with the old one")
	}
	if _, err := project.LoadRun(ctx, st, "c", nil); fault.HintOf(err).Code != fault.HintNeedsTools {
		t.Fatalf("without its Go tool: %v, want HintNeedsTools", err)
	}
}
