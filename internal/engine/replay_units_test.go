package engine_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/trace"
)

// The fan-outs inside a step, driven by the journal's call records and
// plan events as the runner drives them: a for_each step's items
// (sched.Items), a repeat step's rounds (sched.Rounds) and a plan's steps
// (fan.DAG). A unit the journal shows running is handed out by the
// machine first (units it hands out before it, within its limit, are
// written down too: the runner starts them at once); its last call record
// settles it. Where the machine's decision reads data the journal does not
// hold (how many items, whether repeat.until held), the journal says:
// the items are those its records name, and the rounds end where its
// records do.

// units is the scheduling state of the fan-outs of one run's steps.
type units struct {
	items  map[int]*itemFan
	rounds map[int]*roundFan
	plans  map[int]*planFan
	// count is the items of each for_each step, last the last attempt of
	// each unit's calls (by call key without its attempt): what the
	// journal shows, read before it is driven.
	count map[string]int
	last  map[string]int
	// done are the items settled for good, by step: a resumed step does
	// not run them again.
	done map[int]map[int]bool
	// executed is the plan steps executed in the run so far.
	executed int
}

type itemFan struct {
	m     sched.Items
	out   []bool // handed out, not settled
	inFly int
}

type roundFan struct {
	m     sched.Rounds
	out   []bool
	inFly int
}

type planFan struct {
	n     int // the plan's number
	ids   []string
	dag   fan.DAG
	out   []bool
	inFly int
}

func newUnits(events []*trace.Event) *units {
	u := &units{items: map[int]*itemFan{}, rounds: map[int]*roundFan{}, plans: map[int]*planFan{},
		count: map[string]int{}, last: map[string]int{}, done: map[int]map[int]bool{}}
	for _, ev := range events {
		c := ev.Call
		if ev.Kind != trace.CallRecorded || c == nil {
			continue
		}
		if c.Item >= 0 {
			u.count[c.StepID] = max(u.count[c.StepID], c.Item+1)
		}
		u.last[unitKey(c)] = max(u.last[unitKey(c)], c.Attempt)
	}
	return u
}

// unitKey is c's key without its attempt: one unit's op (r/c[1], r/c[1]/fallback).
func unitKey(c *journal.Call) string {
	return c.Key[:max(strings.LastIndex(c.Key, "/"), 0)]
}

// resumed forgets what was in flight: the resumed runner decides again.
func (u *units) resumed() {
	clear(u.items)
	clear(u.rounds)
	clear(u.plans)
}

// settles reports whether c is the last word on its unit's op: a final
// status of its last attempt.
func (u *units) settles(c *journal.Call) bool {
	return (c.Status == journal.CallSucceeded || c.Status == journal.CallFailed) && c.Attempt >= u.last[unitKey(c)]
}

// call drives the fan-out a call record of step i belongs to, if any.
func (d *commandDriver) unitCall(i int, c *journal.Call) error {
	if i < 0 {
		return nil
	}
	s := d.f.Steps[i]
	switch {
	case s.ForEach != nil && c.Item >= 0:
		return d.item(i, c)
	case s.Repeat != nil && c.Round > 0:
		return d.round(i, c)
	case s.Type == flow.Plan && c.Kind == journal.CallModel && c.PlanStep == "" && c.Status == journal.CallSucceeded:
		return d.proposed(i, c)
	}
	return nil
}

func (d *commandDriver) item(i int, c *journal.Call) error {
	u := d.u
	a := u.items[i]
	if a == nil {
		a = &itemFan{out: make([]bool, u.count[c.StepID])}
		a.m.Reset(d.f.Steps[i], u.count[c.StepID])
		for k := range u.done[i] {
			a.m.Skip(k) // settled before a resume
		}
		u.items[i] = a
	}
	k := c.Item
	op := fan.Run
	if c.Fallback {
		op = fan.Recover
	}
	for !a.out[k] {
		got, ok := a.m.Next(a.inFly)
		if !ok {
			return fmt.Errorf("item %d runs, but the machine hands out no item (%d in flight)", k, a.inFly)
		}
		a.out[got.Index] = true
		a.inFly++
		if got.Op == fan.Recover {
			d.say("  item %d: fallback", got.Index)
		} else {
			d.say("  item %d: start", got.Index)
		}
		if got.Index == k && got.Op != op {
			return fmt.Errorf("item %d runs its %s, the machine hands it out for the other", k, map[bool]string{true: "fallback", false: "own call"}[c.Fallback])
		}
	}
	if !u.settles(c) {
		return nil
	}
	a.out[k] = false
	a.inFly--
	failed := c.Status != journal.CallSucceeded
	v := a.m.Settle(fan.Unit{Index: k, Op: op}, failed, fault.Class(c.ErrorClass), false)
	d.say("  item %d: settle %s (%s)", k, c.Status, [...]string{sched.ItemDone: "done", sched.ItemDefaulted: "defaulted",
		sched.ItemFallingBack: "falls back", sched.ItemFailed: "fails the step"}[v])
	if v != sched.ItemFallingBack {
		if u.done[i] == nil {
			u.done[i] = map[int]bool{}
		}
		u.done[i][k] = v != sched.ItemFailed
	}
	return nil
}

func (d *commandDriver) round(i int, c *journal.Call) error {
	a := d.u.rounds[i]
	if a == nil {
		a = &roundFan{out: make([]bool, d.f.Steps[i].Repeat.Max)}
		a.m.Reset(d.f.Steps[i])
		d.u.rounds[i] = a
	}
	k := c.Round - 1
	if k >= len(a.out) {
		return fmt.Errorf("round %d runs, beyond repeat.max %d", c.Round, len(a.out))
	}
	for !a.out[k] {
		got, ok := a.m.Next(a.inFly)
		if !ok {
			return fmt.Errorf("round %d runs, but the machine hands out no round (%d in flight)", c.Round, a.inFly)
		}
		a.out[got.Index] = true
		a.inFly++
		d.say("  round %d: start", got.Index+1)
	}
	if !d.u.settles(c) {
		return nil
	}
	a.out[k] = false
	a.inFly--
	a.m.Fan.Settle(k) // whether until held the next round's record says
	if c.Status != journal.CallSucceeded {
		a.m.Stop()
	}
	d.say("  round %d: settle %s", c.Round, c.Status)
	return nil
}

// proposed starts the DAG of the plan a planner's call returned.
func (d *commandDriver) proposed(i int, c *journal.Call) error {
	var p struct {
		Steps []struct {
			ID        string   `json:"id"`
			DependsOn []string `json:"depends_on"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(c.Output, &p); err != nil {
		return fmt.Errorf("the plan of %s does not decode: %w", c.Key, err)
	}
	a := &planFan{n: c.Plan}
	at := map[string]int{}
	for k, s := range p.Steps {
		at[s.ID] = k
		a.ids = append(a.ids, s.ID)
	}
	deps := make([][]int, len(p.Steps))
	for k, s := range p.Steps {
		for _, on := range s.DependsOn {
			deps[k] = append(deps[k], at[on])
		}
	}
	budget := 1 << 30
	if ps := d.f.Steps[i].PlanSpec; ps != nil && ps.MaxExecuted > 0 {
		budget = ps.MaxExecuted
	}
	a.dag.Reset(deps, plan.DefaultConcurrency, d.u.executed, budget)
	a.out = make([]bool, len(p.Steps))
	d.u.plans[i] = a
	return nil
}

// planStep drives the DAG of step i's plan with a plan step's event.
func (d *commandDriver) planStep(i int, ev *trace.Event) error {
	a := d.u.plans[i]
	if a == nil || ev.PlanStep == "" {
		return nil // an agent's execute_plan, or a plan resumed from its progress
	}
	k := -1
	for j, id := range a.ids {
		if id == ev.PlanStep {
			k = j
		}
	}
	if k < 0 {
		return fmt.Errorf("plan step %s is not in plan %d", ev.PlanStep, a.n)
	}
	switch string(ev.Kind) {
	case string(plan.StepReused):
		a.dag.Reuse(k)
		d.say("  plan %d: reuse %s", a.n, ev.PlanStep)
	case string(plan.StepStarted), string(plan.StepWaiting):
		for !a.out[k] {
			got, ok := a.dag.Next(a.inFly)
			if !ok {
				return fmt.Errorf("plan step %s runs, but the machine hands out none (%d in flight)", ev.PlanStep, a.inFly)
			}
			a.out[got] = true
			a.inFly++
			d.u.executed = a.dag.Executed()
			d.say("  plan %d: start %s", a.n, a.ids[got])
		}
		if ev.Kind == trace.Kind(plan.StepWaiting) {
			return d.planSettle(a, k, fan.Waiting)
		}
	case string(plan.StepSettled):
		st := fan.Failed
		if ev.Status == string(journal.CallSucceeded) {
			st = fan.Succeeded
		}
		return d.planSettle(a, k, st)
	}
	return nil
}

// planSettle settles plan step k of a with st.
func (d *commandDriver) planSettle(a *planFan, k int, st fan.State) error {
	if !a.out[k] {
		return fmt.Errorf("plan step %s settles, but the machine did not hand it out", a.ids[k])
	}
	a.out[k] = false
	a.inFly--
	a.dag.Settle(k, st, st != fan.Waiting)
	d.u.executed = a.dag.Executed()
	d.say("  plan %d: settle %s %s", a.n, a.ids[k], map[fan.State]string{fan.Failed: "failed", fan.Succeeded: "succeeded", fan.Waiting: "waiting"}[st])
	return nil
}
