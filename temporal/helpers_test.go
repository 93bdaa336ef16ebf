package temporal

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
)

// ledger records every execution of the test tools, by tool, with the
// idempotency key each call carried: the observable effects of a run.
type ledger struct {
	mu    sync.Mutex
	calls map[string][]string
	// fails says how many of a tool's first calls fail, and with which
	// class.
	fails map[string]failPlan
	// order is every execution's tool, in the order they were made.
	order []string
}

type failPlan struct {
	n     int
	class fault.Class
}

func newLedger() *ledger { return &ledger{calls: map[string][]string{}, fails: map[string]failPlan{}} }

func (l *ledger) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.calls[name])
}

func (l *ledger) keys(name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.calls[name]...)
	sort.Strings(out)
	return out
}

// tool is a Go tool that records its call and answers {tool, args}, or
// fails as l.fails says.
func (l *ledger) tool(name string, idempotent bool) tool.Tool {
	return l.toolOf(tool.Spec{Name: name, Effect: tool.EffectWrite, Idempotent: idempotent})
}

// toolOf is tool with its spec (effect, reversibility, compensate, tags).
func (l *ledger) toolOf(spec tool.Spec) tool.Tool {
	name := spec.Name
	return tool.Func(spec, func(ctx context.Context, args any) (any, error) {
		l.mu.Lock()
		l.calls[name] = append(l.calls[name], tool.CallInfoFrom(ctx).IdempotencyKey)
		l.order = append(l.order, name)
		n := len(l.calls[name])
		plan := l.fails[name]
		l.mu.Unlock()
		if n <= plan.n {
			return nil, fault.Errorf(plan.class, "%s: failure %d of %d", name, n, plan.n)
		}
		if m, ok := args.(map[string]any); ok && m["fail"] == true {
			return nil, fault.Errorf(fault.Business, "%s: asked to fail", name)
		}
		return map[string]any{"tool": name, "args": args, "n": float64(n)}, nil
	})
}

// load writes flowYAML to a folder and loads it with the ledger's tools.
func load(t *testing.T, flowYAML string, tools ...tool.Tool) *project.Project {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flowYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := project.Load(dir, &project.LoadOptions{Tools: tools})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return p
}

// stepOf is step id's status in st.
func stepOf(t *testing.T, st *Status, id string) StepStatus {
	t.Helper()
	for _, s := range st.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no step %s in %+v", id, st)
	return StepStatus{}
}

// output decodes step id's output in st.
func output(t *testing.T, st *Status, id string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(st.Outputs[id], &v); err != nil {
		t.Fatalf("output of %s: %v (%s)", id, err, st.Outputs[id])
	}
	return v
}

// newTestEnv is s's test environment, whose workflow code may go a minute
// without yielding before the SDK calls it a deadlock: its default, one
// second, fails tests on a loaded machine (a workflow task starved of
// CPU is not a deadlock).
func newTestEnv(s *testsuite.WorkflowTestSuite) *testsuite.TestWorkflowEnvironment {
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	return env
}
