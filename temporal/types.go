package temporal

import (
	"encoding/json"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
)

// The names a Temporal user sees: the workflow's type is the flow's name,
// its id the run's id; its updates and queries are these.
const (
	// UpdateDecide answers a step that waits for a person: approve, reject
	// or settle (Decision). Its validator refuses a decision on a step that
	// waits for nobody, before anything is written to the history.
	UpdateDecide = "decide"
	// UpdateSubmit gives a step that waits for an agent's (or a person's)
	// output that output (Decision: Step, Output, By). Its validator checks
	// the output against the step's output_schema and max_output_bytes.
	UpdateSubmit = "submit"
	// UpdateRetry re-opens a failed run, as rein runs retry does (Decision:
	// Step is the --from step, or empty). A failed run stays open for it
	// for the worker's retry window (Workflow.RetryWindow); a closed one is
	// started again (RetryRun).
	UpdateRetry = "retry"
	// QueryStatus answers Status.
	QueryStatus = "status"
	// QueryPending answers the approvals the run waits on ([]Pending).
	QueryPending = "pending"
	// QueryNextActions answers what a person or agent may do next
	// ([]NextAction).
	QueryNextActions = "next_actions"
)

// Start is a run's workflow input: the pinned flow (its text, as the
// folder held it when the run started, and its hash, which names the
// program a worker must have to run it) and the run's input. The flow
// travels in the history, so a replay always sees the program the run
// started with.
type Start struct {
	Flow     string          `json:"flow"`
	FlowHash string          `json:"flow_hash"`
	FlowText string          `json:"flow_text"`
	Input    json.RawMessage `json:"input"`
	// Tenant is who the run is for (AttrTenant), or empty.
	Tenant string `json:"tenant,omitempty"`
	// SearchAttributes: the run started with rein's search attributes
	// (its namespace has them) and upserts AttrStatus as it changes.
	SearchAttributes bool `json:"search_attributes,omitempty"`
	// Carry is the state of the run this one continues (continue-as-new),
	// or nil for a run that starts.
	Carry *Carry `json:"carry,omitempty"`
	// Retry, with Carry, starts a failed run's workflow again (RetryRun):
	// the steps it re-opens run at their next attempt, the others keep
	// their outputs.
	Retry *Decision `json:"retry,omitempty"`
}

// attemptIn is one activity's input: one attempt of one step (or of one
// for_each item, or its fallback), with what the run settled so far.
type attemptIn struct {
	RunID    string                     `json:"run_id"`
	FlowHash string                     `json:"flow_hash"`
	Op       string                     `json:"op"` // opAttempt, opItems, opCheck
	Step     int                        `json:"step"`
	Attempt  int                        `json:"attempt"`
	Item     int                        `json:"item"`
	Fallback bool                       `json:"fallback,omitempty"`
	Approved bool                       `json:"approved,omitempty"`
	Input    json.RawMessage            `json:"input"`
	Outputs  map[string]json.RawMessage `json:"outputs,omitempty"`
	Statuses map[string]string          `json:"statuses,omitempty"`
	// Output is the whole output opCheck checks; for opAsk, the calls a
	// person approved (engine.AskGate).
	Output json.RawMessage `json:"output,omitempty"`
	// Agent is an opAgent's unit (agent.go).
	Agent *agentIn `json:"agent,omitempty"`
	// Round is a repeat step's round, from 1, and Previous the output of
	// the round before it (engine.AttemptRequest).
	Round    int             `json:"round,omitempty"`
	Previous json.RawMessage `json:"previous,omitempty"`
	// Effect is the call an opCompensate takes back (saga.go), and Tier
	// the run's highest risk tier, its floor.
	Effect *journal.Effect `json:"effect,omitempty"`
	// Tenant is the run's (Start.Tenant), and Spent what the run spent
	// against its budgets when the activity was scheduled (budget.go).
	Tenant string       `json:"tenant,omitempty"`
	Spent  *sched.Spent `json:"spent,omitempty"`
	Tier   int          `json:"tier,omitempty"`
	// Tainted are the origins the run's earlier activities tainted
	// (saga.tainted; engine.Settled.Tainted). Tier is handed to every
	// activity, not only a compensation: the run's tier as the workflow
	// holds it when it schedules the activity, the floor its calls start
	// from (engine.Settled.Tier).
	Tainted []invoke.Taint `json:"tainted,omitempty"`
	// Plan is a plan step's plan to continue, from a lost attempt's
	// heartbeats (engine.AttemptRequest.Plan, lostwork.go).
	Plan *plan.Progress `json:"plan,omitempty"`
	// PlanCall, with Plan, is the plan's call in doubt an opReconcile asks
	// its tool's check about.
	PlanCall *engine.PlanCall `json:"plan_call,omitempty"`
}

// The activity's operations.
const (
	opAttempt = "attempt" // one attempt of a step or item (or its fallback)
	opItems   = "items"   // how many items a for_each step has
	opCheck   = "check"   // a whole output's gate and size
	// opAgent: one unit of an agent step (its next turn, or one call)
	opAgent = "agent"
	// opReconcile: ask a tool step's check: whether its call in doubt
	// took effect
	opReconcile = "reconcile"
	// opCompensate: the undo or compensation of a call a failed saga
	// takes back (saga.go)
	opCompensate = "compensate"
)

// attemptOut is an activity's answer.
type attemptOut struct {
	Output json.RawMessage `json:"output,omitempty"`
	Items  int             `json:"items,omitempty"`
	Agent  *agentOut       `json:"agent,omitempty"`
	// Reconciled is an opReconcile's answer.
	Reconciled *reconciled `json:"reconciled,omitempty"`
	// Effects are the effect records of the calls an attempt made that
	// reached a tool with an effect, in a flow with on_failure:
	// compensate (saga.go).
	Effects []journal.Effect `json:"effects,omitempty"`
	// Gate is an opAsk's answer (askgate.go).
	Gate *gateAsked `json:"gate,omitempty"`
	// Spent is what the activity's model calls spent (budget.go).
	Spent *sched.Spent `json:"spent,omitempty"`
	// Tier is the run's risk tier as the attempt left it, when the flow's
	// runs have risk tiers (engine.AttemptRequest.OnTier).
	Tier int `json:"tier,omitempty"`
	// Tainted is the run's taint as the activity left it, when its calls
	// (or the run's earlier ones) tainted an origin (engine.Settled.
	// OnTainted).
	Tainted []invoke.Taint `json:"tainted,omitempty"`
}

// failure is how an attempt's error crosses the activity boundary: its
// fault class is the ApplicationError's type, and this its detail.
type failure struct {
	Class      string `json:"class"`
	Message    string `json:"message"`
	RetryAfter int64  `json:"retry_after_ns,omitempty"`
	Budget     string `json:"budget,omitempty"`
	// Premise: the attempt's output (or one of its tool calls') contradicts
	// a declared premise: not retried, and the step parks as
	// store.KindPremise, pausing the run (engine.PremiseFailed).
	Premise bool `json:"premise,omitempty"`
	// Effects are attemptOut.Effects of an attempt that failed: a failed
	// call may have had its effect too.
	Effects []journal.Effect `json:"effects,omitempty"`
	// Spent is attemptOut.Spent of an attempt that failed.
	Spent *sched.Spent `json:"spent,omitempty"`
	// Tier is attemptOut.Tier of an attempt that failed.
	Tier int `json:"tier,omitempty"`
	// Tainted is attemptOut.Tainted of an activity that failed.
	Tainted []invoke.Taint `json:"tainted,omitempty"`
}

// Decision answers a step that waits (UpdateDecide).
type Decision struct {
	// Step is the waiting step's id.
	Step string `json:"step"`
	// Action is "approve", "reject" or "settle".
	Action string `json:"action"`
	// Output is the step's output, for settle.
	Output json.RawMessage `json:"output,omitempty"`
	By     string          `json:"by,omitempty"`
	// Comment says why.
	Comment string `json:"comment,omitempty"`
}

// The decisions' actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionSettle  = "settle"
	// ActionSubmit and ActionRetry name UpdateSubmit's and UpdateRetry's
	// arguments (NextAction); the updates take them or none.
	ActionSubmit = "submit"
	ActionRetry  = "retry"
)

// Status is what QueryStatus answers: the run's status, each step's, and
// the run's error once it failed.
type Status struct {
	RunID   string                     `json:"run_id"`
	Flow    string                     `json:"flow"`
	Status  string                     `json:"status"`
	Steps   []StepStatus               `json:"steps"`
	Outputs map[string]json.RawMessage `json:"outputs,omitempty"`
	Error   *RunError                  `json:"error,omitempty"`
	// Usage is what the run spent against its budgets, as a local run's
	// Result.Usage counts it (rein.Usage); nil from a run recorded before
	// the status carried it.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage counts what a run consumed against its budgets: step executions,
// for_each items, repeat rounds and agent steps (iterations), model calls
// and tokens. It is a local run's (rein.Usage), JSON included.
type Usage = engine.Usage

// StepStatus is one step's state in Status.
type StepStatus struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts,omitempty"`
	Error    string `json:"error,omitempty"`
}

// RunError is a failed run's error: its class, step and message.
type RunError struct {
	Class   string `json:"class"`
	Step    string `json:"step,omitempty"`
	Message string `json:"message"`
}

// Pending is one approval the run waits on (QueryPending).
type Pending struct {
	Step string `json:"step"`
	// Kind is the store's approval kind: approval, unknown, escalation,
	// submission.
	Kind    string `json:"kind"`
	Attempt int    `json:"attempt"`
	// Error is why it waits, for an escalation or an unknown step.
	Error string `json:"error,omitempty"`
}

// NextAction is one thing that may be done with the run now
// (QueryNextActions): an update and its arguments, and the rein command
// that sends it. A failed run whose workflow closed takes no update: its
// one action is the retry as a new execution of its workflow id (Update
// empty, Command "rein runs retry RUN": RetryRun).
type NextAction struct {
	Update string   `json:"update"`
	Step   string   `json:"step"`
	Action string   `json:"action"`
	Why    string   `json:"why"`
	Args   Decision `json:"args"`
	// Command is the rein command line that does it, without --temporal
	// and the server's address.
	Command string `json:"command"`
}

// Result is the workflow's result: the run's final Status.
type Result = Status
