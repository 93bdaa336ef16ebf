//go:build linux

package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/proc"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// liveGroup starts a shell in a process group of its own that waits on a
// child, as an exec tool that spawned a helper, and returns it as a
// tool.Process.
func liveGroup(t *testing.T) tool.Process {
	t.Helper()
	return liveGroupMarked(t, "")
}

// liveGroupMarked is liveGroup whose processes inherit mark (an
// environment entry, as tool/exec's calls' do); with a mark, the shell
// also starts a process that leaves the group (setsid), found once it
// runs.
func liveGroupMarked(t *testing.T, mark string) tool.Process {
	t.Helper()
	script := "sleep 60 & wait"
	if mark != "" {
		script = "setsid sleep 60 & sleep 60 & wait"
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	if mark != "" {
		cmd.Env = append(os.Environ(), mark)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	start, err := proc.StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// the shell forks its child after Start returns: wait until the group
	// holds both, so the tests start from the tree they describe.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if live, _ := proc.Live(cmd.Process.Pid); len(live) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %d never held the shell and its child", cmd.Process.Pid)
		}
	}
	if mark != "" {
		for deadline := time.Now().Add(10 * time.Second); len(markedPIDs(t, mark)) < 3; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the setsid process of group %d never ran", cmd.Process.Pid)
			}
		}
	}
	return tool.Process{PGID: cmd.Process.Pid, Start: start, Boot: proc.BootID(), Mark: mark}
}

// markedPIDs lists the live processes whose environment holds mark.
func markedPIDs(t *testing.T, mark string) []int {
	t.Helper()
	names, err := filepath.Glob("/proc/[0-9]*/environ")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, n := range names {
		env, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == mark {
				pid, _ := strconv.Atoi(strings.Split(n, "/")[2])
				out = append(out, pid)
			}
		}
	}
	return out
}

// leftoverRun runs an idempotent step whose tool reports a live process
// group on its first call, under a lease owner that is a dead process of
// this machine, and interrupts it while the tool runs, leaving the run
// leased to that owner as a crash would. Later calls of the tool fail
// unless the first group is gone by then.
func leftoverRun(t *testing.T) (fx *fixture, st store.Store, dead string, group tool.Process, calls *atomic.Int32) {
	t.Helper()
	return leftoverRunOf(t, liveGroup(t))
}

// leftoverRunOf is leftoverRun whose tool reports group.
func leftoverRunOf(t *testing.T, group tool.Process) (fx *fixture, st store.Store, dead string, _ tool.Process, calls *atomic.Int32) {
	t.Helper()
	st = openSQLite(t)
	dead = deadOwner(t)
	calls = &atomic.Int32{}
	started := make(chan struct{}, 1)
	fetch := tool.Func(tool.Spec{Name: "fetch", Effect: tool.EffectRead, Idempotent: true}, func(ctx context.Context, _ any) (any, error) {
		if calls.Add(1) > 1 {
			if live, _ := proc.Live(group.PGID); len(live) > 0 {
				return nil, fault.BusinessErr(fmt.Errorf("the first attempt's group %d still runs %v beside the second", group.PGID, live))
			}
			return map[string]any{}, nil
		}
		tool.ProcessStarted(ctx, group)
		started <- struct{}{}
		<-ctx.Done()
		return nil, fault.New(fault.Cancelled, context.Cause(ctx))
	})
	fx = newFixture(t, fetch)
	f := fx.parse("name: p\nsteps:\n  - {id: fetch, tool: fetch, args: {}}\n")
	rctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-started
		cancel(engine.ErrInterrupted)
	}()
	res, err := durableEngine(fx, st, dead).Run(rctx, f, nil, &engine.RunOptions{RunID: "r"})
	if err != nil || !res.Interrupted {
		t.Fatalf("run: %v %+v; want interrupted", err, res)
	}
	leaseTo(t, st, dead)
	if live, _ := proc.Live(group.PGID); len(live) != 2 {
		t.Fatalf("group %d holds %v; want the shell and its child", group.PGID, live)
	}
	return fx, st, dead, group, calls
}

// TestStopLeftoversKillsTheGroupsOfADeadOwner: StopLeftovers, which every
// opening of a store runs, kills the live groups a dead process's tools
// left, idempotent steps' too, and finds nothing the second time.
func TestStopLeftoversKillsTheGroupsOfADeadOwner(t *testing.T) {
	t.Parallel()
	_, st, _, group, _ := leftoverRun(t)
	killed, err := engine.StopLeftovers(context.Background(), st)
	if err != nil || killed != 1 {
		t.Fatalf("StopLeftovers = %d, %v; want 1 group killed", killed, err)
	}
	if live, err := proc.Live(group.PGID); err != nil || len(live) != 0 {
		t.Fatalf("group %d still holds %v (%v)", group.PGID, live, err)
	}
	if killed, err := engine.StopLeftovers(context.Background(), st); err != nil || killed != 0 {
		t.Fatalf("StopLeftovers again = %d, %v; want nothing left", killed, err)
	}
}

// TestStopLeftoversKillsWhatLeftTheGroup: a process of a dead owner's
// tool call that left the call's group (setsid) is found by the mark the
// call's processes inherit, and killed with the group.
func TestStopLeftoversKillsWhatLeftTheGroup(t *testing.T) {
	t.Parallel()
	mark := "REIN_CALL_TOKEN=test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, st, _, group, _ := leftoverRunOf(t, liveGroupMarked(t, mark))
	killed, err := engine.StopLeftovers(context.Background(), st)
	if err != nil || killed != 2 {
		t.Fatalf("StopLeftovers = %d, %v; want the group and what left it killed", killed, err)
	}
	if live, err := proc.Live(group.PGID); err != nil || len(live) != 0 {
		t.Fatalf("group %d still holds %v (%v)", group.PGID, live, err)
	}
	if left := markedPIDs(t, mark); len(left) != 0 {
		t.Fatalf("processes %v of the call still run", left)
	}
}

// TestResumeStopsTheGroupsOfADeadOwnerBeforeARerun: a resume (as a worker
// that claims the run does, long after it opened the store) kills the dead
// process's groups before it runs the idempotent step again.
func TestResumeStopsTheGroupsOfADeadOwnerBeforeARerun(t *testing.T) {
	t.Parallel()
	fx, st, _, group, calls := leftoverRun(t)
	f := fx.parse("name: p\nsteps:\n  - {id: fetch, tool: fetch, args: {}}\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := durableEngine(fx, st, "p2").Resume(ctx, f, "r")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, trace.RunSucceeded)
	if n := calls.Load(); n != 2 {
		t.Fatalf("the tool ran %d times, want 2", n)
	}
	if live, _ := proc.Live(group.PGID); len(live) != 0 {
		t.Fatalf("group %d still holds %v", group.PGID, live)
	}
}
