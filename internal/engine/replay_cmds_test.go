package engine_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

var updateCommands = flag.Bool("update-commands", false, "write the command goldens of testdata/replay that do not exist yet (never rewrites one)")

// TestReplayCommands drives the scheduler's machine with every committed
// journal of testdata/replay, as the runner drives it, and compares the
// commands it gives (start a step, await an outcome, finish the run; an
// agent turn's calls as its fan-out hands them out) with the case's
// <case>.commands golden. Where the journal shows what the runner did, the
// machine must have commanded it: a step the journal starts is the step
// the machine hands out next, an outcome arrives only while the machine
// awaits, and the run settles only when it says finish. A change that
// schedules old runs differently fails here. -update-commands writes the
// goldens of new cases; an existing one is never rewritten.
func TestReplayCommands(t *testing.T) {
	t.Parallel()
	journals, err := filepath.Glob(filepath.Join(replayDir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(journals) == 0 {
		t.Fatal("no journals in " + replayDir)
	}
	for _, path := range journals {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := filepath.Join(replayDir, name)
			src, err := os.ReadFile(base + ".flow.yaml")
			if err != nil {
				t.Fatal(err)
			}
			f, err := flow.Parse(src, base+".flow.yaml", &flow.Options{Models: func(string) bool { return true },
				Tools: func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true }})
			if err != nil {
				t.Fatalf("the pinned flow no longer parses: %v", err)
			}
			got, err := replayCommands(f, readJournal(t, path))
			if err != nil {
				t.Fatal(err)
			}
			golden := base + ".commands"
			want, err := os.ReadFile(golden)
			if os.IsNotExist(err) && *updateCommands {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", golden)
				return
			}
			if err != nil {
				t.Fatalf("%v (a new case: run go test ./internal/engine -run TestReplayCommands -update-commands)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the machine commands, for %s,\n%s\nthe golden %s holds\n%s", path, got, golden, want)
			}
		})
	}
}

// commandDriver feeds a journal to the machine as the runner would have
// driven it, and writes down each command.
type commandDriver struct {
	f        *flow.Flow
	m        *sched.Machine
	running  []bool // the step's work is in flight (started, no outcome yet)
	inFlight int
	reseed   bool // a resume or a decision: queue again what is ready
	out      bytes.Buffer
	// turn is the fan-out of the agent turn in flight, by step.
	turns map[int]*agentFan
	// u are the fan-outs of items, rounds and plan steps in flight.
	u *units
}

// agentFan is an agent turn's calls as the loop's fan-out hands them out.
type agentFan struct {
	turn  int
	keys  []string // the chosen calls' keys, in call order
	fan   fan.Fan
	out   []bool // handed out, not settled
	inFly int
}

func replayCommands(f *flow.Flow, events []*trace.Event) ([]byte, error) {
	d := &commandDriver{f: f, m: sched.New(f, "r"), running: make([]bool, len(f.Steps)), turns: map[int]*agentFan{},
		u: newUnits(events)}
	for _, ev := range events {
		if err := d.event(ev); err != nil {
			return nil, fmt.Errorf("event %d (%s %s): %w", ev.Seq, ev.Kind, ev.StepID, err)
		}
	}
	return d.out.Bytes(), nil
}

func (d *commandDriver) say(format string, args ...any) {
	fmt.Fprintf(&d.out, format+"\n", args...)
}

// step is the index of the step ev names (an agent call's approval names
// "step/turn<t>/call<c>"), or -1.
func (d *commandDriver) step(ev *trace.Event) int {
	id, _, _ := strings.Cut(ev.StepID, "/")
	if s := d.f.StepByID(id); s != nil {
		return s.Index
	}
	return -1
}

// next asks the machine for its next command.
func (d *commandDriver) next() sched.Command {
	if d.reseed {
		for i := range d.f.Steps {
			if st := d.m.Status(i); (st == trace.StepWaiting || st == trace.StepUnknown) && !d.parked(i) {
				d.m.Requeue(i) // decided: the runner dispatches it again
			}
		}
		d.m.Recount()
		d.m.Seed()
		d.reseed = false
	}
	return d.m.Next(d.inFlight)
}

func (d *commandDriver) parked(i int) bool {
	for _, p := range d.m.Pending() {
		if p.Step == i {
			return true
		}
	}
	return false
}

// dispatched checks that the machine hands out step i now: the journal
// shows the runner carrying out its start.
func (d *commandDriver) dispatched(i int) error {
	if st := d.m.Status(i); d.reseed && (st == trace.StepWaiting || st == trace.StepUnknown) {
		// resumed once its approvals were decided in the store: an agent
		// call's decision is journaled by none but the dispatch itself.
		d.m.Requeue(i)
	}
	cmd := d.next()
	if cmd.Op != sched.Start || cmd.Step != i {
		return fmt.Errorf("the journal dispatches step %s, the machine says %s", d.f.Steps[i].ID, d.name(cmd))
	}
	d.say("start %s", d.f.Steps[i].ID)
	return nil
}

// outcome checks that the machine awaits: step i's work reports.
func (d *commandDriver) outcome(i int) error {
	if cmd := d.next(); cmd.Op != sched.Await {
		return fmt.Errorf("step %s reports, the machine says %s", d.f.Steps[i].ID, d.name(cmd))
	}
	d.say("await")
	d.running[i] = false
	d.inFlight--
	return nil
}

func (d *commandDriver) name(cmd sched.Command) string {
	switch cmd.Op {
	case sched.Start:
		return "start " + d.f.Steps[cmd.Step].ID
	case sched.Await:
		return "await"
	}
	return "finish"
}

func (d *commandDriver) event(ev *trace.Event) error {
	i := d.step(ev)
	switch ev.Kind {
	case trace.RunStarted:
		d.say("run started")
		if err := d.m.Apply(ev); err != nil {
			return err
		}
		d.m.Seed()
		return nil
	case trace.RunResumed:
		// the process that ran it is gone: what was in flight is decided again.
		d.say("run resumed")
		for k, r := range d.running {
			if r {
				d.m.Requeue(k)
				d.running[k] = false
			}
		}
		d.inFlight, d.reseed = 0, true
		clear(d.turns)
		d.u.resumed()
	case trace.ApprovalDecided:
		d.reseed = true
	case trace.StepStarted:
		if !d.running[i] {
			if err := d.dispatched(i); err != nil {
				return err
			}
			d.running[i] = true
			d.inFlight++
		}
	case trace.StepSettled:
		if d.running[i] {
			if err := d.outcome(i); err != nil {
				return err
			}
		} else if err := d.dispatched(i); err != nil {
			return err
		}
		d.say("settle %s %s", ev.StepID, ev.Status)
	case trace.ApprovalRequested:
		switch {
		case d.running[i]:
			if err := d.outcome(i); err != nil {
				return err
			}
		case d.m.Status(i) != trace.StepWaiting && d.m.Status(i) != trace.StepUnknown:
			if err := d.dispatched(i); err != nil {
				return err
			}
		}
		d.say("park %s %s", ev.StepID, ev.Decision)
	case trace.RunSettled, trace.RunParked:
		if ev.Status == string(trace.RunFailed) || ev.Status == string(trace.RunCancelled) {
			d.m.Stop()
		}
		if cmd := d.next(); cmd.Op != sched.Finish {
			return fmt.Errorf("the run settles %s, the machine says %s", ev.Status, d.name(cmd))
		}
		d.say("finish %s", ev.Status)
	case trace.AgentTurn:
		return d.agentTurn(i, ev)
	case trace.AgentCall:
		return d.agentCall(i, ev)
	case trace.CallRecorded:
		switch {
		case ev.Call == nil:
		case ev.Call.Agent != nil:
			if err := d.agentCall(i, ev); err != nil {
				return err
			}
		default: // an item's, a round's, a planner's
			if err := d.unitCall(i, ev.Call); err != nil {
				return err
			}
		}
	case trace.Kind(plan.StepStarted), trace.Kind(plan.StepSettled), trace.Kind(plan.StepWaiting), trace.Kind(plan.StepReused):
		if err := d.planStep(i, ev); err != nil {
			return err
		}
	}
	return d.m.Apply(ev)
}

// agentTurn starts the fan-out of a turn's chosen calls, at most the
// step's concurrency at once, and hands out what it may.
func (d *commandDriver) agentTurn(i int, ev *trace.Event) error {
	var turn struct {
		Calls []struct {
			Status string `json:"status"`
			Key    string `json:"key"`
		} `json:"calls"`
	}
	if t := ev.AgentTurn; t != nil { // journal version 4: the typed record
		for _, c := range t.Calls {
			turn.Calls = append(turn.Calls, struct {
				Status string `json:"status"`
				Key    string `json:"key"`
			}{c.Agent.Status, c.Key})
		}
	} else if err := json.Unmarshal([]byte(ev.Data), &turn); err != nil {
		return err
	}
	a := &agentFan{turn: ev.Turn}
	for _, c := range turn.Calls {
		if c.Status == "chosen" {
			a.keys = append(a.keys, c.Key)
		}
	}
	if len(a.keys) == 0 {
		return nil
	}
	limit := flow.DefaultConcurrency
	if s := d.f.Steps[i]; s.Agent != nil && s.Agent.Concurrency > 0 {
		limit = s.Agent.Concurrency
	}
	a.fan.Reset(len(a.keys), limit)
	a.out = make([]bool, len(a.keys))
	d.turns[i] = a
	d.handOut(a)
	return nil
}

func (d *commandDriver) handOut(a *agentFan) {
	for {
		u, ok := a.fan.Next(a.inFly)
		if !ok {
			return
		}
		a.out[u.Index] = true
		a.inFly++
		d.say("  turn %d: start %s", a.turn, a.keys[u.Index][strings.LastIndex(a.keys[u.Index], "/")+1:])
	}
}

// agentCall settles a call the turn's fan-out handed out; calls settled
// without running (invalid, rejected, decided) are not the fan-out's.
func (d *commandDriver) agentCall(i int, ev *trace.Event) error {
	c, turn, _, err := engine.AgentCallOf(ev) // its call record, or an agent_call event
	if err != nil {
		return err
	}
	a := d.turns[i]
	if a == nil || a.turn != turn {
		return nil
	}
	for k, key := range a.keys {
		if key != c.Key {
			continue
		}
		if !a.out[k] {
			return fmt.Errorf("call %s settles, but the turn's fan-out did not hand it out", key)
		}
		a.out[k] = false
		a.inFly--
		a.fan.Settle(k)
		d.say("  turn %d: settle %s %s", a.turn, key[strings.LastIndex(key, "/")+1:], c.Status)
		d.handOut(a)
	}
	return nil
}
