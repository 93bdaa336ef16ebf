package workflowtool_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
)

// countingStore is a real store that counts the run rows read from it.
type countingStore struct {
	store.Store
	gets atomic.Int64
}

func (s *countingStore) GetRun(ctx context.Context, id string) (*store.Run, error) {
	s.gets.Add(1)
	return s.Store.GetRun(ctx, id)
}

// A submit reads its task's row once to check and decide, and once more
// after the task ran on, to answer; resuming reads it once in the engine
// (its lease). Loading the pinned flow and recording the decision take
// the row already read.
func TestSubmitReadsTheTaskRowOnce(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: openStore(t)}
	w := newWorkflow(t, "../../examples/process-workflow", st)
	a, err := w.Do(ctx, &workflowtool.Request{Action: "start", SessionID: "s", Input: []byte(`{"description":"reads"}`)})
	if err != nil {
		t.Fatal(err)
	}
	st.gets.Store(0)
	if _, err := w.Do(ctx, &workflowtool.Request{Action: "submit", TaskID: a.TaskID, StepID: "parse", Data: []byte(`{"items":["frame"]}`)}); err != nil {
		t.Fatal(err)
	}
	if n := st.gets.Load(); n > 3 {
		t.Errorf("a submit read the task's row %d times, want at most 3", n)
	}
}
