package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// countingStore counts the write transactions the engine asks for.
type countingStore struct {
	store.Store
	mu       sync.Mutex
	creates  int // CreateRun calls
	commits  int
	creating int // Commits that create their run
}

// Unwrap returns the wrapped store (store.IsEphemeral follows it).
func (s *countingStore) Unwrap() store.Store { return s.Store }

func (s *countingStore) CreateRun(ctx context.Context, p *store.CreateRunParams) (*store.Run, bool, error) {
	s.mu.Lock()
	s.creates++
	s.mu.Unlock()
	return s.Store.CreateRun(ctx, p)
}

func (s *countingStore) Commit(ctx context.Context, t *store.Transition) error {
	s.mu.Lock()
	s.commits++
	if t.Create != nil {
		s.creating++
	}
	s.mu.Unlock()
	return s.Store.Commit(ctx, t)
}

// A linear run of n steps costs n+1 commits and no more: its first
// transition creates it (run started, first step started), each step's
// settlement shares a commit with the next one's start, and the last one
// settles the run. A flow with an idempotency key looks its run up first.
// When the steps are pure (tools with no effect, idempotent), the first
// step's start rides with its settlement: n commits.
func TestDurableRunCommitsOncePerStep(t *testing.T) {
	t.Parallel()
	const linear = "steps:\n  - {id: one, tool: a, args: {}}\n  - {id: two, tool: a, args: {}}\n  - {id: three, tool: a, args: {}}\n"
	for _, tc := range []struct {
		name, flow                 string
		pure                       bool
		creates, commits, creating int
	}{
		{"no idempotency key", "name: c\n" + linear, false, 0, 4, 1},
		{"idempotency key", "name: c\nidempotency: input_hash\n" + linear, false, 1, 4, 0},
		{"pure steps", "name: c\n" + linear, true, 0, 3, 1},
		{"pure steps, idempotency key", "name: c\nidempotency: input_hash\n" + linear, true, 1, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newKeyCounter("a", true)
			if tc.pure {
				a.spec.Effect = tool.EffectNone
			}
			fx := newFixture(t, a)
			st := &countingStore{Store: openSQLite(t)}
			res, err := durableEngine(fx, st, "p1").Run(context.Background(), fx.parse(tc.flow), map[string]any{}, nil)
			if err != nil || res.Status != trace.RunSucceeded {
				t.Fatalf("run: %v, %+v", err, res)
			}
			if st.creates != tc.creates || st.commits != tc.commits || st.creating != tc.creating {
				t.Errorf("CreateRun ×%d, Commit ×%d (creating ×%d); want ×%d, ×%d (×%d)",
					st.creates, st.commits, st.creating, tc.creates, tc.commits, tc.creating)
			}
			run, err := st.GetRun(context.Background(), res.RunID)
			if err != nil || run.Status != trace.RunSucceeded || run.Version != int64(st.commits) || run.FlowHash == "" {
				t.Errorf("stored run %+v, %v", run, err)
			}
		})
	}
}

// peekTool is a pure tool that, when it runs, reads what the store holds
// of its run's steps.
type peekTool struct {
	st   store.Store
	seen [][]*store.Step
}

func (p *peekTool) Spec() tool.Spec {
	return tool.Spec{Name: "peek", Effect: tool.EffectNone, Idempotent: true}
}

func (p *peekTool) Call(ctx context.Context, _ any) (any, error) {
	steps, err := p.st.Steps(ctx, tool.CallInfoFrom(ctx).RunID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	p.seen = append(p.seen, steps)
	return map[string]any{}, nil
}

// A pure step's start is not committed before it runs, but every earlier
// step's settlement is: when step k runs, steps 1..k-1 are settled in the
// store (and step k is there, running, unless it is the first).
func TestPureStepsCommitEachSettlementBeforeTheNext(t *testing.T) {
	t.Parallel()
	st := openSQLite(t)
	p := &peekTool{st: st}
	fx := newFixture(t, p)
	res, err := durableEngine(fx, st, "p1").Run(context.Background(),
		fx.parse("name: peek\nsteps:\n  - {id: one, tool: peek, args: {}}\n  - {id: two, tool: peek, args: {}}\n  - {id: three, tool: peek, args: {}}\n"), map[string]any{}, nil)
	if err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("run: %v, %+v", err, res)
	}
	if len(p.seen) != 3 {
		t.Fatalf("peek ran %d times, want 3", len(p.seen))
	}
	if len(p.seen[0]) != 0 {
		t.Errorf("while the first pure step ran the store had %d steps, want none (its start rides with its settlement)", len(p.seen[0]))
	}
	for k, steps := range p.seen[1:] {
		k++ // step k+1 (index k) is running; steps before it settled
		if len(steps) != k+1 {
			t.Fatalf("while step %d ran the store had %d steps, want %d", k+1, len(steps), k+1)
		}
		for i, s := range steps {
			want := trace.StepSucceeded
			if i == k {
				want = trace.StepRunning
			}
			if s.Status != want {
				t.Errorf("while step %d ran, step %s was %s in the store, want %s", k+1, s.StepID, s.Status, want)
			}
		}
	}
}

func TestLastPerStepKeepsTheNewestRowOfEachStepInOrder(t *testing.T) {
	t.Parallel()
	for _, n := range []int{4, 40} { // both sides of the map threshold
		var rows []*store.Step
		for i := range n {
			rows = append(rows, &store.Step{StepID: fmt.Sprint("s", i%(n/2)), Attempt: i})
		}
		got := engine.LastPerStep(rows)
		if len(got) != n/2 {
			t.Fatalf("n=%d: kept %d rows, want %d", n, len(got), n/2)
		}
		for k, row := range got {
			if row.StepID != fmt.Sprint("s", k) || row.Attempt != n/2+k {
				t.Fatalf("n=%d: row %d is %s attempt %d, want s%d attempt %d", n, k, row.StepID, row.Attempt, k, n/2+k)
			}
		}
	}
}
