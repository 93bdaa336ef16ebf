//go:build temporalserver

package servertest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

// TestPremiseHoldEndToEnd: on a real server, a for_each step whose first
// item is in flight when a premise on another branch fails starts no
// further item while the premise waits (the workflow is idle with one
// item run); once a person settles the premise its items go on, each
// once, and the run succeeds. Its history is the committed
// run-premise.json.
func TestPremiseHoldEndToEnd(t *testing.T) {
	ts := server(t)
	c := ts.GetDefaultClient()
	ctx := context.Background()
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	began, open := make(chan struct{}), make(chan struct{})
	var first sync.Once
	lookup := tool.Func(tool.Spec{Name: "lookup", Effect: tool.EffectRead, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
		<-began // the first item is in flight
		l.add("lookup", tool.CallInfoFrom(ctx).IdempotencyKey)
		return map[string]any{"region": ""}, nil
	})
	item := tool.Func(tool.Spec{Name: "item", Effect: tool.EffectWrite, Idempotent: true}, func(ctx context.Context, args any) (any, error) {
		l.add("item", tool.CallInfoFrom(ctx).IdempotencyKey)
		first.Do(func() {
			close(began)
			<-open // until the run waits on the premise
		})
		return args, nil
	})
	p, err := project.Load(filepath.Join("..", "testdata", "flows", "premise"), &project.LoadOptions{Tools: []tool.Tool{lookup, item}})
	if err != nil {
		t.Fatal(err)
	}
	fs := temporal.NewFlows()
	fs.Add(p)
	ts.NewWorkerWithOptions(queue, register(fs), worker.Options{})
	const id = "run-premise"
	if _, err := temporal.StartRun(ctx, c, p, map[string]any{"ids": []any{"a", "b", "c"}}, temporal.StartOptions{RunID: id, TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		var pend []temporal.Pending
		return temporal.Query(ctx, c, id, temporal.QueryPending, &pend) == nil && len(pend) == 1 && pend[0].Step == "lookup" && pend[0].Kind == "premise"
	})
	close(open)
	// the workflow took the first item's result and waits: Follow (rein
	// run --temporal) sees the run waiting, with no further item.
	if st := follow(t, c, id); st.Status != "waiting" {
		t.Fatalf("run while the premise waits: %+v %+v", st, st.Error)
	}
	scheduled := 0
	for _, ev := range history(t, c, id) {
		if ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			scheduled++
		}
	}
	if got := l.lines("item"); len(got) != 1 || scheduled != 3 {
		t.Fatalf("while the premise waits: items %v, %d activities scheduled; want 1 item, 3 activities (items, lookup, item 0)", got, scheduled)
	}
	if err := temporal.Update(ctx, c, id, temporal.UpdateDecide, temporal.Decision{Step: "lookup", Action: temporal.ActionSettle, Output: json.RawMessage(`{"region": "eu"}`), By: "ana"}); err != nil {
		t.Fatal(err)
	}
	if st := follow(t, c, id); st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := keys(l.lines("item")); len(got) != 3 || got[0] != id+"/each[0]/1" || got[1] != id+"/each[1]/1" || got[2] != id+"/each[2]/1" {
		t.Errorf("item calls %v, want each item once", got)
	}
	if got := l.lines("lookup"); len(got) != 1 {
		t.Errorf("lookup calls %v, want 1", got)
	}
	saveHistory(t, c, id)
}

// history is the events of run id's history so far.
func history(t *testing.T, c client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	var out []*historypb.HistoryEvent
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}
