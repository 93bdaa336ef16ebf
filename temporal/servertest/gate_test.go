//go:build temporalserver

package servertest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
)

// TestGateParkEndToEnd: on a real server, a tool step whose call the
// flow's policy requires approval of waits before it runs (the pending
// query names the rule), then a for_each step waits once for its items;
// each approved, its calls run once, and the run succeeds. Its history is
// the committed run-gate.json.
func TestGateParkEndToEnd(t *testing.T) {
	ts := server(t)
	c := ts.GetDefaultClient()
	ctx := context.Background()
	l := &ledger{path: filepath.Join(t.TempDir(), "ledger")}
	p, err := project.Load(filepath.Join("..", "testdata", "flows", "gate"), &project.LoadOptions{Tools: l.tools(false)})
	if err != nil {
		t.Fatal(err)
	}
	fs := temporal.NewFlows()
	fs.Add(p)
	ts.NewWorkerWithOptions(queue, register(fs), workerOptions)
	const id = "run-gate"
	if _, err := temporal.StartRun(ctx, c, p, map[string]any{"amount": 250, "items": []any{3, 400}}, temporal.StartOptions{RunID: id, TaskQueue: queue}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"big", "each"} {
		if st := follow(t, c, id); st.Status != "waiting" {
			t.Fatalf("run before %s: %+v %+v", step, st, st.Error)
		}
		var pend []temporal.Pending
		if err := temporal.Query(ctx, c, id, temporal.QueryPending, &pend); err != nil {
			t.Fatal(err)
		}
		if len(pend) != 1 || pend[0].Step != step || !strings.Contains(pend[0].Error, "rule large-pay") {
			t.Fatalf("pending before %s: %+v", step, pend)
		}
		if err := temporal.Update(ctx, c, id, temporal.UpdateDecide, temporal.Decision{Step: step, Action: temporal.ActionApprove, By: "ana"}); err != nil {
			t.Fatal(err)
		}
	}
	if st := follow(t, c, id); st.Status != "succeeded" {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if got := strings.Join(keys(l.lines("pay")), " "); got != id+"/small/1 "+id+"/big/1 "+id+"/each[0]/1 "+id+"/each[1]/1" &&
		got != id+"/small/1 "+id+"/big/1 "+id+"/each[1]/1 "+id+"/each[0]/1" {
		t.Errorf("pay calls %q", got)
	}
	saveHistory(t, c, id)
}
