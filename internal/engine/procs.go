package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/reinhq/rein/internal/proc"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// onProcess is the tool.ProcessHook of a durable run. When a step's tool
// starts a process group, it journals the group (a tool_process event) and
// commits it at once, so that if this process dies, the next rein that
// opens the store (StopLeftovers) or resumes the run (stopLeftovers) finds
// the group and stops what is left of it: the tool's own process dies
// with rein (tool/exec's parent-death signal on Linux), but what it
// spawned stays in its group. Idempotent steps are recorded too: a resume
// runs them again, and their first attempt must not run on beside it. A
// process that dies between the start and this commit leaves no record.
func (r *run) onProcess(ctx context.Context, p tool.Process) {
	info := tool.CallInfoFrom(ctx)
	s := r.f.StepByID(info.StepID)
	if s == nil || info.RunID != r.id {
		return
	}
	r.record(trace.Event{Kind: trace.ToolProcess, StepID: s.ID, StepType: string(s.Type), Attempt: info.Attempt,
		Process: trace.Process{PGID: p.PGID, Start: p.Start, Boot: p.Boot, Owner: r.d.owner, Mark: p.Mark}})
	r.flush()
}

// toolProcesses returns the tool_process events of a journal.
func toolProcesses(evs []*trace.Event) []*trace.Event {
	var out []*trace.Event
	for _, e := range evs {
		if e.Kind == trace.ToolProcess && e.Process.PGID > 1 {
			out = append(out, e)
		}
	}
	return out
}

// stopLeftovers, on resume, before any step runs or is parked as unknown,
// kills what is still alive of the process groups the run's journal
// records (r.d.procs) that a dead process of this machine left, so that
// neither a re-run of an idempotent step nor approving an unknown one can
// race the first attempt. It returns, by index of the steps in toPark,
// what it found of their groups, for the question a person is asked.
func (r *run) stopLeftovers() map[int]string {
	parked := make(map[string]int, len(r.d.toPark))
	for _, i := range r.d.toPark {
		parked[r.f.Steps[i].ID] = i
	}
	found := map[int][]string{}
	for _, e := range r.d.procs {
		said := leftover(e.Process)
		if i, ok := parked[e.StepID]; ok {
			found[i] = append(found[i], said)
		}
	}
	notes := make(map[int]string, len(found))
	for i, fs := range found {
		notes[i] = summarizeLeftovers(fs)
	}
	return notes
}

// MaxLeftoverRuns bounds how many running runs StopLeftovers looks at.
const MaxLeftoverRuns = 1000

// StopLeftovers stops what exec tools of dead rein processes of this
// machine left running in st: for each running run (up to
// MaxLeftoverRuns, newest first) whose lease owner is a process of this
// host and PID namespace that no longer runs, it kills the live members of
// the process groups the run's journal records (tool_process) that such a
// process started, the leader's start time and the boot id guarding
// against a reused id. Every rein command that opens a store calls it
// (rein.Open), so a tool's grandchildren do not run on until somebody
// resumes the run. It returns how many groups it killed. A run it cannot
// read is skipped and reported in the error, after the others were
// looked at; groups it cannot check (another machine, a system without
// /proc) are left to the resume, which says so. What a tool moved out of
// its group (setsid, setpgid) is found on Linux by the mark its call's
// processes inherit (tool.Process.Mark), unless it cleared its
// environment.
func StopLeftovers(ctx context.Context, st store.Store) (killed int, err error) {
	runs, err := st.ListRuns(ctx, &store.ListRunsParams{Status: trace.RunRunning, Limit: MaxLeftoverRuns})
	if err != nil {
		return 0, fmt.Errorf("engine: list running runs to stop the tools of dead processes: %w", err)
	}
	var errs []error
	for _, run := range runs {
		if !ownerGone(run.LeaseOwner) {
			continue
		}
		evs, err := st.Events(ctx, run.ID, 0, -1)
		if err != nil {
			errs = append(errs, fmt.Errorf("engine: read the journal of run %s to stop the tools of its dead process: %w", run.ID, err))
			continue
		}
		for _, e := range toolProcesses(evs) {
			if !ownerGone(e.Process.Owner) {
				continue
			}
			if rep, err := proc.Stop(e.Process.PGID, e.Process.Start, e.Process.Boot, proc.DefaultWait); err == nil && rep.State != proc.Gone && rep.State != proc.Foreign {
				killed++
			}
			if rep, err := stopMarked(e.Process); err == nil && rep.State != proc.Gone {
				killed++
			}
		}
	}
	return killed, errors.Join(errs...)
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
	said := leftoverGroup(p)
	if rep, err := stopMarked(p); err == nil && rep.State != proc.Gone {
		escaped := fmt.Sprintf("%d %s of the call of tool process group %d had left the group (setsid) and still ran: rein killed %s",
			rep.Found, plural(rep.Found, "process", "processes"), p.PGID, plural(rep.Found, "it", "them"))
		if rep.State == proc.Stuck {
			escaped += fmt.Sprintf(", but %d %s still there after %s: make sure it stopped", rep.Left, plural(rep.Left, "is", "are"), proc.DefaultWait)
		}
		if said == noneLeft {
			return escaped
		}
		return said + "; " + escaped
	}
	return said
}

// stopMarked stops the processes that still carry the mark of p's call
// (tool/exec's MarkVar), wherever their group: those that left it. A
// group of another boot has none left.
func stopMarked(p trace.Process) (proc.Report, error) {
	if p.Mark == "" || p.Boot != "" && proc.BootID() != "" && p.Boot != proc.BootID() {
		return proc.Report{State: proc.Gone}, nil
	}
	return proc.StopMarked(p.Mark, proc.DefaultWait)
}

// leftoverGroup stops what is left of p's process group and says what it
// found ("" when nothing was left running).
func leftoverGroup(p trace.Process) string {
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
