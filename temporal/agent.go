package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/value"
)

// An agent step runs turn by turn: the workflow holds its session (the
// turns as the activities committed them, and people's decisions on its
// calls), asks agent.NextUnits what follows, and hands each unit to a
// worker as an activity: the model's next turn (activity "agent:STEP", id
// the attempt's key and /turn<t>), or one tool call of the last turn
// (activity "call:TOOL", id the call's idempotency key
// run/step/attempt/turn<t>/call<c>). Which calls run, the budgets, the stop
// conditions, approvals and the rule for a call in doubt are the loop's
// (agent.Loop.Step, through engine.AgentUnit): a call whose activity lost
// its worker is carried out again as lost (agent.Unit.Lost), so the loop
// runs it again only when its tool is safe to repeat, asks its tool's
// check: otherwise, and else waits for a person as unknown.

// agentVersion names the change that runs agent steps turn by turn (a
// history recorded before it runs them as one activity).
const agentVersion = "agent-turn-by-turn"

// agentRun is an agent step's session in workflow code.
type agentRun struct {
	attempt   int
	started   time.Time
	turns     []agent.Turn
	decisions map[string]agent.Decision
	// asked are the refs (turn<t>/call<c>) the step waits on; answered
	// those a decision came for since.
	asked    []string
	answered map[string]bool
	// why are the reasons the asked calls wait (QueryPending's Error).
	why map[string]string
	seq int
	// units counts the units made since this run (or its continuation)
	// began.
	units int
}

// agentIn is an agent unit's part of an activity's input: the session's
// turns from Since on and the decisions on them. Since > 0 (a run that took
// changeAgentSession) says the first Since turns, and the decisions on
// them, are left out: Digest names them (sessionDigest), and the worker
// gets them by reference (session.go). Since 0: Turns and Decisions are
// the whole session.
type agentIn struct {
	Turns     []agent.Turn              `json:"turns,omitempty"`
	Decisions map[string]agent.Decision `json:"decisions,omitempty"`
	Started   time.Time                 `json:"started"`
	Unit      agent.Unit                `json:"unit"`
	Since     int                       `json:"since,omitempty"`
	Digest    string                    `json:"digest,omitempty"`
}

// agentOut is an agent unit's answer: the status, the turns from From on
// as the unit left them, the pending calls, the step's output once
// answered.
type agentOut struct {
	Status  string          `json:"status"`
	From    int             `json:"from"`
	Turns   []agent.Turn    `json:"turns,omitempty"`
	Pending []agent.Pending `json:"pending,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
}

// runAgent is agent step i's coroutine (see above). A step that waited
// for people continues its session with their decisions.
func (r *wrun) runAgent(ctx workflow.Context, i, first int, v view) outcome {
	a := r.agents[i]
	if a == nil || first > a.attempt {
		// a new attempt (a person let an escalated step run again) starts
		// a new session.
		if err := r.budget.Iteration(); err != nil {
			return outcome{i: i, attempts: first, err: errBudget(err)}
		}
		a = &agentRun{attempt: first}
		r.agents[i] = a
	}
	// the wall-time budget runs while the loop works: waiting for a
	// person starts it again, as in a local run.
	a.started = workflow.Now(ctx)
	a.asked, a.answered = nil, nil
	for {
		if r.agentShouldContinue(ctx, i, a) {
			return outcome{i: i, attempts: a.attempt, carry: true}
		}
		// a failed premise elsewhere holds the units not started (hold.go).
		if gate, cf := r.holdGate(ctx, true); cf != nil {
			return outcome{i: i, attempts: a.attempt, err: cf}
		} else if gate == sched.UnitsStop {
			return r.heldStop(i, a.attempt)
		}
		next := agent.NextUnits(&agent.Session{Turns: a.turns})
		if next.Turn {
			out, f := r.agentUnit(ctx, i, a, agent.Unit{}, v)
			if f != nil {
				return r.recover(ctx, i, a.attempt, f, v)
			}
			a.turns = append(a.turns[:out.From], out.Turns...)
			switch agent.Status(out.Status) {
			case agent.StatusAnswered:
				return outcome{i: i, status: journal.StepSucceeded, out: out.Output, attempts: a.attempt}
			case agent.StatusPaused:
				return r.agentPark(i, a, out.Pending)
			}
			continue
		}
		pend, f := r.agentCalls(ctx, i, a, next.Calls, v)
		if f != nil {
			return r.recover(ctx, i, a.attempt, f, v)
		}
		if len(pend) > 0 {
			return r.agentPark(i, a, pend)
		}
	}
}

// agentCalls carries out the open calls of the last turn, each a unit, at
// most the step's concurrency at once, and returns the calls that wait
// for people.
func (r *wrun) agentCalls(ctx workflow.Context, i int, a *agentRun, calls []int, v view) ([]agent.Pending, *failure) {
	type done struct {
		k   int
		out *agentOut
		f   *failure
	}
	limit := r.f.Steps[i].Agent.Concurrency
	if limit <= 0 {
		limit = agent.DefaultConcurrency // as the loop's own
	}
	var m fan.Fan
	m.Reset(len(calls), limit)
	ch := workflow.NewChannel(ctx)
	inFlight := 0
	var pend []agent.Pending
	var failed *failure
	last := len(a.turns) - 1
	for {
		gate, cf := r.holdGate(ctx, inFlight == 0 && failed == nil && m.CanStart(0))
		if cf != nil && failed == nil {
			failed = cf
		}
		if gate == sched.UnitsStop && inFlight == 0 {
			return nil, failed // runAgent stops the step
		}
		if u, ok := nextUnit(gate, &m, inFlight); ok && failed == nil {
			inFlight++
			k := calls[u.Index]
			workflow.Go(ctx, func(ctx workflow.Context) {
				out, f := r.agentUnit(ctx, i, a, agent.Unit{Call: k}, v)
				ch.Send(ctx, done{k: k, out: out, f: f})
			})
			continue
		}
		if inFlight == 0 {
			return pend, failed
		}
		var d done
		ch.Receive(ctx, &d)
		inFlight--
		m.Settle(0)
		if d.f != nil {
			if failed == nil {
				failed = d.f
			}
			m.Stop()
			continue
		}
		// the unit settled its call only: take that call of the turn.
		if t := d.out.Turns; len(t) > 0 && t[len(t)-1].N == a.turns[last].N && d.k <= len(t[len(t)-1].Calls) {
			a.turns[last].Calls[d.k-1] = t[len(t)-1].Calls[d.k-1]
		}
		if agent.Status(d.out.Status) == agent.StatusPaused {
			pend = append(pend, d.out.Pending...)
		} else if st := a.turns[last].Calls[d.k-1].Status; st == agent.StatusChosen {
			if failed == nil {
				failed = &failure{Class: string(fault.Transient), Message: fmt.Sprintf("agent step %s: call %s did not settle", r.f.Steps[i].ID, agent.Ref(a.turns[last].N, d.k))}
			}
		}
	}
}

// agentUnit runs one unit as an activity. A unit whose worker was lost
// runs again, as lost (agent.Unit.Lost), at most lostReruns times; one
// that never ran runs again as it was.
func (r *wrun) agentUnit(ctx workflow.Context, i int, a *agentRun, u agent.Unit, v view) (*agentOut, *failure) {
	for lost, notRun := 0, 0; ; {
		in := r.agentInput(ctx, a, u)
		a.units++
		res, ff := r.exec(ctx, call{i: i, op: opAgent, item: -1, attempt: a.attempt, rerun: lost + notRun, agent: in}, v)
		if ff == nil {
			if res.Agent == nil {
				return nil, &failure{Class: string(fault.Business), Message: "an agent unit answered nothing"}
			}
			return res.Agent, nil
		}
		switch {
		case ff.notRun && notRun < lostReruns:
			notRun++
			continue
		case ff.lost && lost < lostReruns:
			lost++
			u.Lost = true
			continue
		}
		return nil, &ff.failure
	}
}

// agentPark is the outcome of agent step i waiting for people on pend.
func (r *wrun) agentPark(i int, a *agentRun, pend []agent.Pending) outcome {
	a.asked, a.why = a.asked[:0], make(map[string]string, len(pend))
	for _, p := range pend {
		a.asked = append(a.asked, p.Ref)
		a.why[p.Ref] = p.Reason
	}
	return outcome{i: i, attempts: a.attempt, park: store.KindApproval, calls: pend}
}

// agentDecide records a decision d on call ref of agent step i; it
// reports whether every call the step waits on is decided now.
func (r *wrun) agentDecide(i int, ref string, d Decision) bool {
	a := r.agents[i]
	if a.decisions == nil {
		a.decisions = map[string]agent.Decision{}
	}
	if a.answered == nil {
		a.answered = map[string]bool{}
	}
	a.seq++
	ad := agent.Decision{Verdict: agent.Approve, Comment: d.Comment, ID: fmt.Sprintf("%s/%s#%d", r.f.Steps[i].ID, ref, a.seq)}
	switch d.Action {
	case ActionReject:
		ad.Verdict = agent.Reject
	case ActionSettle:
		ad.Verdict = agent.Settle
		_ = json.Unmarshal(d.Output, &ad.Output) // the validator checked it is JSON
	}
	a.decisions[ref] = ad
	a.answered[ref] = true
	for _, q := range a.asked {
		if !a.answered[q] {
			return false
		}
	}
	return true
}

// agentActivity is the activity type, id and key of an agent unit of step
// stepID at attempt key: "agent:STEP", key/turn<t> for the model's next
// turn; "call:TOOL" and the call's idempotency key for a call.
func agentActivity(stepID, key string, in *agentIn) (name, id, ckey string) {
	if k := in.Unit.Call; k > 0 && len(in.Turns) > 0 {
		t := in.Turns[len(in.Turns)-1]
		if k <= len(t.Calls) {
			c := t.Calls[k-1]
			return "call:" + c.Tool, c.Key, c.Key
		}
	}
	id = fmt.Sprintf("%s/turn%d", key, in.Since+len(in.Turns)+1)
	return "agent:" + stepID, id, id
}

// agentUnit carries out an opAgent activity: one unit of an agent step on
// the worker's engine (engine.AgentUnit), on its whole session
// (sessionOf); the session it leaves is kept for the step's next unit.
func (a *Activities) agentUnit(ctx context.Context, e *engine.Engine, f *flow.Flow, s *engine.Settled, in *attemptIn, onEffect func(journal.Effect), onTier func(int)) (*agentOut, error) {
	if in.Agent == nil {
		return nil, fault.BusinessErr(fmt.Errorf("agent unit of step %d: no unit given", in.Step))
	}
	turns, decisions, err := a.sessionOf(ctx, in)
	if err != nil {
		return nil, err
	}
	res, err := e.AgentUnit(ctx, f, s, engine.AgentUnitRequest{RunID: in.RunID, Step: in.Step, Attempt: in.Attempt,
		Turns: turns, Decisions: decisions, Started: in.Agent.Started, Unit: in.Agent.Unit, OnEffect: onEffect, OnTier: onTier})
	if err != nil {
		return nil, err
	}
	from := max(len(turns)-1, 0)
	out := &agentOut{Status: string(res.Status), From: from, Turns: res.Turns[min(from, len(res.Turns)):], Pending: res.Pending}
	if res.Status == agent.StatusAnswered {
		if out.Output, err = value.Canonical(res.Output); err != nil {
			return nil, fault.BusinessErr(fmt.Errorf("output is not JSON: %w", err))
		}
	}
	a.keepSession(ctx, in, turns, decisions, out)
	return out, nil
}
