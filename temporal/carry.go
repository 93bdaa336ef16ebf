package temporal

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/store"
)

// Continue-as-new. A long run (many steps, rounds, retries or decisions)
// grows its workflow's history; Temporal suggests continuing as new past
// its limits (workflow.Info.GetContinueAsNewSuggested), and
// Workflow.ContinueAsNewAfter sets a lower threshold. The run continues as
// a new workflow run of the same id only where nothing is in flight (no
// activity, no update handler): before it starts a step, or as it waits
// for a decision. It carries the run's state (Carry) in the new run's
// input, which restores it into the machine (sched.Machine.Restore, Park)
// and goes on: the same steps run, with the same attempts and keys.
//
// A long agent run continues as new too, between two of its units (a model
// turn, a call), when it is the only step running and no decision waits to
// be carried out: when the server suggests it, when the history passed
// ContinueAsNewAfter events, or after Workflow.ContinueAfterUnits units.
// The agent step is carried as pending with its session (Carry.Agents), and
// starts again in the new run from that session: no turn is asked again,
// no call made twice.

// Carry is the state of a run handed to the run that continues it.
type Carry struct {
	Status string      `json:"status"`
	Steps  []carryStep `json:"steps"`
	// Outputs are the settled steps' outputs, canonical JSON, by step id.
	Outputs map[string]json.RawMessage `json:"outputs,omitempty"`
	// Answers are decisions taken and not yet carried out, by step id.
	Answers   map[string]carryAnswer `json:"answers,omitempty"`
	Failure   *RunError              `json:"failure,omitempty"`
	Spent     sched.Spent            `json:"spent"`
	Published string                 `json:"published,omitempty"`
	// Rounds are a repeat step's rounds settled before one of them parked
	// it in doubt; First a re-opened step's first attempt: by step id.
	Rounds map[string][]json.RawMessage `json:"rounds,omitempty"`
	First  map[string]int               `json:"first,omitempty"`
	// Generation counts the runs continued so far.
	Generation int `json:"generation"`
	// Deadline is when the run's budgets.timeout passes, if its clock ran
	// (runtimeout.go).
	Deadline *time.Time `json:"deadline,omitempty"`
	// Agents are the sessions of agent steps, by step index.
	Agents map[int]*carriedAgent `json:"agents,omitempty"`
	// Effects are the calls with an effect a saga would take back, in
	// the order they completed, and Remedied the keys it took back
	// already (saga.go).
	Effects  []journal.Effect `json:"effects,omitempty"`
	Remedied []string         `json:"remedied,omitempty"`
	// Tier is the run's highest risk tier (saga.tier), and Tainted the
	// origins its calls tainted (saga.tainted).
	Tier    int            `json:"tier,omitempty"`
	Tainted []invoke.Taint `json:"tainted,omitempty"`
	// Made counts how often each key's undo or compensation was made, and
	// Escalations are the saga's remediations that wait on a person, by
	// key (sagacarry.go).
	Made        map[string]int             `json:"made,omitempty"`
	Escalations map[string]*sagaEscalation `json:"escalations,omitempty"`
	// TakenBack are the keys among Remedied whose calls the saga took
	// back (undone, compensated, or settled by a person): a retry makes
	// their steps again (retrytaken.go). A run carried by a rein before
	// it has none, and its retry keeps them, as it did.
	TakenBack []string `json:"taken_back,omitempty"`
	// Doubt is what steps parked in doubt keep, by step id (doubt.go).
	Doubt map[string]*carryDoubt `json:"doubt,omitempty"`
}

type carriedAgent struct {
	Attempt   int                       `json:"attempt"`
	Turns     []agent.Turn              `json:"turns,omitempty"`
	Decisions map[string]agent.Decision `json:"decisions,omitempty"`
	Seq       int                       `json:"seq,omitempty"`
}

type carryStep struct {
	Status   string `json:"status"`
	Attempts int    `json:"attempts,omitempty"`
	SHA      string `json:"sha,omitempty"`
	Error    string `json:"error,omitempty"`
	// Park is the approval kind a waiting step waits on.
	Park string `json:"park,omitempty"`
}

type carryAnswer struct {
	Status   string   `json:"status"`
	Kind     string   `json:"kind"`
	Decision Decision `json:"decision"`
}

// shouldContinue reports whether the run continues as new here: nothing
// is in flight, Temporal suggests it or the history passed
// Workflow.ContinueAsNewAfter events, and the run takes the change
// rein-continue-as-new.
func (r *wrun) shouldContinue(ctx workflow.Context, inFlight int) bool {
	if inFlight > 0 {
		return false
	}
	info := workflow.GetInfo(ctx)
	n := r.w.ContinueAsNewAfter
	if !info.GetContinueAsNewSuggested() && (n <= 0 || info.GetCurrentHistoryLength() < n) {
		return false
	}
	// asked only here, so that a history recorded before replays as it
	// ran (DefaultVersion: it never continued as new).
	return version(ctx, changeContinueAsNew) != workflow.DefaultVersion
}

// agentShouldContinue reports whether the run continues as new before
// agent step i's next unit: the step is the only one running, nothing
// waits on a person or is decided and not carried out, and the server
// suggests it, the history passed ContinueAsNewAfter events or the step
// made ContinueAfterUnits units.
func (r *wrun) agentShouldContinue(ctx workflow.Context, i int, a *agentRun) bool {
	if r.failure != nil || len(r.m.Pending()) > 0 || len(r.answers) > 0 || len(r.inbox) > 0 {
		return false
	}
	for j := range r.f.Steps {
		if j != i && r.m.Status(j) == journal.StepRunning {
			return false
		}
	}
	if n := r.w.ContinueAfterUnits; n > 0 && a.units >= n {
		return true
	}
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || r.w.ContinueAsNewAfter > 0 && info.GetCurrentHistoryLength() >= r.w.ContinueAsNewAfter
}

// continueAsNew hands the run's state to a new run of the same workflow
// (its error is workflow.ContinueAsNewError, the workflow's return).
// agentStep is the agent step that continues from its session (-1: none).
func (r *wrun) continueAsNew(ctx workflow.Context, agentStep int) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	if cancelledAtCarry(ctx) {
		return temporal.NewCanceledError() // the run ends cancelled (ended), not in a new run that never heard of it
	}
	in := r.in
	in.Carry, in.Retry = r.carry(agentStep), nil // the retry was carried out
	return workflow.NewContinueAsNewError(ctx, workflow.GetInfo(ctx).WorkflowType.Name, in)
}

// carry is the run's state as Carry; agentStep (running) is carried as
// pending, to start again from its session.
func (r *wrun) carry(agentStep int) *Carry {
	c := &Carry{Status: string(r.status), Outputs: r.raw, Failure: r.failure, Spent: r.budget.Spent(), Published: string(r.published), Tier: r.saga.tier, Tainted: r.saga.tainted, Deadline: r.carriedDeadline()}
	if r.in.Carry != nil {
		c.Generation = r.in.Carry.Generation + 1
	}
	parked := map[int]string{}
	for _, p := range r.m.Pending() {
		parked[p.Step] = string(p.Kind)
	}
	for i, s := range r.f.Steps {
		st := r.m.Status(i)
		if i == agentStep {
			st = journal.StepPending // it starts again, and goes on from its session
		}
		c.Steps = append(c.Steps, carryStep{Status: string(st), Attempts: r.m.Attempts(i), SHA: r.m.OutputSHA(i), Error: r.errs[s.ID], Park: parked[i]})
	}
	for j, a := range r.agents {
		if c.Agents == nil {
			c.Agents = map[int]*carriedAgent{}
		}
		c.Agents[j] = &carriedAgent{Attempt: a.attempt, Turns: a.turns, Decisions: a.decisions, Seq: a.seq}
	}
	for i, a := range r.answers {
		if c.Answers == nil {
			c.Answers = map[string]carryAnswer{}
		}
		c.Answers[r.f.Steps[i].ID] = carryAnswer{Status: string(a.a.Status), Kind: string(a.a.Kind), Decision: a.d}
	}
	for i, rounds := range r.rounds {
		if c.Rounds == nil {
			c.Rounds = map[string][]json.RawMessage{}
		}
		c.Rounds[r.f.Steps[i].ID] = rounds
	}
	for _, e := range r.saga.effects {
		c.Effects = append(c.Effects, *e)
		if r.saga.done[e.Key] {
			c.Remedied = append(c.Remedied, e.Key)
		}
	}
	r.carrySaga(c)
	r.carryDoubts(c)
	for i, n := range r.first {
		if c.First == nil {
			c.First = map[string]int{}
		}
		c.First[r.f.Steps[i].ID] = n
	}
	return c
}

// restore takes the state a continued run handed over: the machine's
// statuses and approvals, the outputs, decisions not yet carried out
// (queued again: they are carried out as the run goes on), and what the
// run spent.
func (r *wrun) restore(c *Carry) {
	r.status = journal.RunStatus(c.Status)
	r.published = journal.RunStatus(c.Published)
	r.failure = c.Failure
	r.budget.Restore(c.Spent)
	r.noteEffects(c.Effects)
	r.saga.init()
	r.saga.tier, r.saga.tainted = c.Tier, c.Tainted
	for _, k := range c.Remedied {
		r.saga.done[k] = true
	}
	r.restoreSaga(c)
	for i, s := range r.f.Steps {
		if i >= len(c.Steps) {
			break
		}
		cs := c.Steps[i]
		r.m.Restore(i, journal.StepStatus(cs.Status), cs.Attempts, cs.SHA)
		if cs.Park != "" {
			r.m.Park(i, store.ApprovalKind(cs.Park), cs.Attempts)
		}
		if cs.Error != "" {
			r.errs[s.ID] = cs.Error
		}
		if raw, ok := c.Outputs[s.ID]; ok {
			r.raw[s.ID], r.outputs[s.ID] = raw, decode(raw)
		}
		if a, ok := c.Answers[s.ID]; ok {
			r.answers[i] = &answer{a: sched.Answered{Status: store.ApprovalStatus(a.Status), Kind: store.ApprovalKind(a.Kind)}, d: a.Decision}
			r.inbox = append(r.inbox, i)
		}
		if rounds, ok := c.Rounds[s.ID]; ok {
			if r.rounds == nil {
				r.rounds = map[int][]json.RawMessage{}
			}
			r.rounds[i] = rounds
		}
		r.restoreDoubt(c, i)
		if n, ok := c.First[s.ID]; ok {
			if r.first == nil {
				r.first = map[int]int{}
			}
			r.first[i] = n
		}
	}
	for j, a := range c.Agents {
		r.agents[j] = &agentRun{attempt: a.Attempt, turns: a.Turns, decisions: a.Decisions, seq: a.Seq}
	}
	if r.failure != nil {
		r.m.Stop()
	}
	r.m.Recount()
}
