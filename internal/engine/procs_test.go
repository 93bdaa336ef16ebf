package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestToolProcessIsJournaled: the process group a step's tool starts,
// idempotent or not, is committed to the journal before the tool returns
// (a resume by another process must find it even if this one dies now). A resume that cannot check the group
// (its owner is not a process of this machine) says so in the question
// about the unknown step.
func TestToolProcessIsJournaled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSQLite(t)
	journaled := func(ctx context.Context, step string) bool {
		evs, err := st.Events(ctx, tool.CallInfoFrom(ctx).RunID, 0, -1)
		if err != nil {
			t.Error(err)
		}
		for _, e := range evs {
			if e.Kind == trace.ToolProcess && e.StepID == step {
				return true
			}
		}
		return false
	}
	started := make(chan struct{}, 1)
	fetch := tool.Func(tool.Spec{Name: "fetch", Effect: tool.EffectRead, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
		tool.ProcessStarted(ctx, tool.Process{PGID: 4241, Start: 7, Boot: "b"})
		if !journaled(ctx, "fetch") {
			return nil, fault.BusinessErr(fmt.Errorf("the idempotent step's process group was not committed when the tool went on"))
		}
		return map[string]any{}, nil
	})
	send := tool.Func(tool.Spec{Name: "send", Effect: tool.EffectExternal}, func(ctx context.Context, _ any) (any, error) {
		tool.ProcessStarted(ctx, tool.Process{PGID: 4242, Start: 7, Boot: "b"})
		if !journaled(ctx, "send") {
			return nil, fault.BusinessErr(fmt.Errorf("the process group was not committed when the tool went on"))
		}
		started <- struct{}{}
		<-ctx.Done()
		return nil, fault.New(fault.Cancelled, context.Cause(ctx))
	})
	fx := newFixture(t, fetch, send)
	f := fx.parse("name: p\nsteps:\n  - {id: fetch, tool: fetch, args: {}}\n  - {id: send, tool: send, args: {}}\n")
	rctx, cancel := context.WithCancelCause(ctx)
	go func() {
		<-started
		cancel(engine.ErrInterrupted)
	}()
	res, err := durableEngine(fx, st, "p1").Run(rctx, f, nil, &engine.RunOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted {
		t.Fatalf("status %s, error %+v; want interrupted while send ran", res.Status, res.Error)
	}
	evs, err := st.Events(ctx, "r", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var procs []trace.Process
	for _, e := range evs {
		if e.Kind == trace.ToolProcess {
			procs = append(procs, e.Process)
		}
	}
	want := []trace.Process{{PGID: 4241, Start: 7, Boot: "b", Owner: "p1"}, {PGID: 4242, Start: 7, Boot: "b", Owner: "p1"}}
	if len(procs) != 2 || procs[0] != want[0] || procs[1] != want[1] {
		t.Fatalf("journaled process groups %+v, want fetch's and send's %+v", procs, want)
	}

	res, err = durableEngine(fx, st, "p2").Resume(ctx, f, "r")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunWaiting)
	wantMsg := "Tool process group 4242 was started by p1, on another machine or in another PID namespace, which rein cannot check from here"
	if len(res.Pending) != 1 || res.Pending[0].Kind != store.KindUnknown || !strings.Contains(res.Pending[0].Message, wantMsg) || strings.Contains(res.Pending[0].Message, "4241") {
		t.Fatalf("pending %+v, want send unknown saying %q, and nothing of fetch's group", res.Pending, wantMsg)
	}
}
