package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/reinhq/rein/store"
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
func TestDurableRunCommitsOncePerStep(t *testing.T) {
	t.Parallel()
	const linear = "steps:\n  - {id: one, tool: a, args: {}}\n  - {id: two, tool: a, args: {}}\n  - {id: three, tool: a, args: {}}\n"
	for _, tc := range []struct {
		name, flow                 string
		creates, commits, creating int
	}{
		{"no idempotency key", "name: c\n" + linear, 0, 4, 1},
		{"idempotency key", "name: c\nidempotency: input_hash\n" + linear, 1, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newKeyCounter("a", true)
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
