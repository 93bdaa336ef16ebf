package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/reinhq/rein/internal/proc"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// onProcess is the tool.ProcessHook of a durable run. When a
// non-idempotent step's tool starts a process group, it journals the group
// (a tool_process event) and commits it at once, so that a resume by
// another process finds the group if this one dies, and stops what is left
// of it before it asks a person about the step (stopLeftovers). A process
// that dies between the start and this commit leaves no record; on Linux
// the tool's own process dies with it (tool/exec's parent-death signal).
// Idempotent steps are not recorded: a resume runs them again anyway.
func (r *run) onProcess(ctx context.Context, p tool.Process) {
	info := tool.CallInfoFrom(ctx)
	s := r.f.StepByID(info.StepID)
	if s == nil || info.RunID != r.id || r.idempotent(s.Index) {
		return
	}
	r.record(trace.Event{Kind: trace.ToolProcess, StepID: s.ID, StepType: string(s.Type), Attempt: info.Attempt,
		Process: trace.Process{PGID: p.PGID, Start: p.Start, Boot: p.Boot, Owner: r.d.owner}})
	r.flush()
}

// stopLeftovers looks, before the steps in toPark are parked as unknown,
// for the process groups their tools started (tool_process events) and
// kills those still alive that a dead process of this machine left, so
// that approving an unknown step can never race its first attempt. It
// returns, by step index, what it found, for the question a person is
// asked.
func (r *run) stopLeftovers(ctx context.Context) map[int]string {
	parked := make(map[string]int, len(r.d.toPark))
	for _, i := range r.d.toPark {
		parked[r.f.Steps[i].ID] = i
	}
	evs, err := r.e.cfg.Store.Events(ctx, r.id, 0, -1)
	if err != nil {
		notes := make(map[int]string, len(parked))
		for _, i := range parked {
			notes[i] = fmt.Sprintf("rein could not read the run's journal to look for tool processes still running (%v): make sure the step's tool stopped before you decide", err)
		}
		return notes
	}
	found := map[int][]string{}
	for _, e := range evs {
		i, ok := parked[e.StepID]
		if !ok || e.Kind != trace.ToolProcess || e.Process.PGID <= 1 {
			continue
		}
		found[i] = append(found[i], leftover(e.Process))
	}
	notes := make(map[int]string, len(found))
	for i, fs := range found {
		notes[i] = summarizeLeftovers(fs)
	}
	return notes
}

// noneLeft is what leftover says of a group with nothing left running.
const noneLeft = ""

// leftover stops what is left of one recorded process group and says what
// it found ("" when nothing of it was left running).
func leftover(p trace.Process) string {
	pid, local := localPID(p.Owner)
	switch {
	case !local:
		return fmt.Sprintf("tool process group %d was started by %s, on another machine or in another PID namespace, which rein cannot check from here: make sure it stopped", p.PGID, p.Owner)
	case pid != os.Getpid() && !processGone(pid):
		return fmt.Sprintf("tool process group %d belongs to process %d, which still runs (its lease ran out): it stops its tools once it finds its lease lost; make sure it did", p.PGID, pid)
	}
	rep, err := proc.Stop(p.PGID, p.Start, p.Boot, proc.DefaultWait)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return fmt.Sprintf("this system cannot tell whether tool process group %d of the stopped process still runs: make sure it stopped", p.PGID)
	case err != nil:
		return fmt.Sprintf("rein could not check tool process group %d of the stopped process (%v): make sure it stopped", p.PGID, err)
	}
	switch rep.State {
	case proc.Killed:
		return fmt.Sprintf("tool process group %d of the stopped process (%d %s) was still running: rein killed it before parking the step", p.PGID, rep.Found, plural(rep.Found, "process", "processes"))
	case proc.Stuck:
		return fmt.Sprintf("tool process group %d of the stopped process was still running: rein killed it, but %d %s still there after %s: make sure it stopped", p.PGID, rep.Left, plural(rep.Left, "process is", "processes are"), proc.DefaultWait)
	}
	return noneLeft // gone, or its id now belongs to other processes
}

// summarizeLeftovers joins what leftover found for one step's groups.
func summarizeLeftovers(found []string) string {
	var said []string
	for _, f := range found {
		if f != noneLeft {
			said = append(said, f)
		}
	}
	if len(said) == 0 {
		return "no tool process of the stopped process was left running"
	}
	return strings.Join(said, "; ")
}
