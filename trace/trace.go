// Package trace defines the events a run emits and the Sink port they go to.
// Events are the run's record: the durable store persists exactly these, and
// `rein trace` summarises them. Adapters live in subpackages (trace/jsonl,
// trace/slogsink); the engine depends only on this package.
package trace

import (
	"context"
	"math"
	"time"
)

// Kind names what happened.
type Kind string

// Event kinds, in the order a run emits them.
const (
	RunStarted    Kind = "run_started"
	StepStarted   Kind = "step_started"   // a step execution began (once, before its first attempt)
	AttemptFailed Kind = "attempt_failed" // one attempt failed; a retry or on_error follows
	ModelCall     Kind = "model_call"     // one model exchange finished (tokens are here)
	StepSettled   Kind = "step_settled"   // the step reached a final status
	RunSettled    Kind = "run_settled"    // the run reached a final status
	GateDecision  Kind = "gate_decision"  // the policy gate decided on a tool invocation (every decision of a configured gate)
	CallDiscarded Kind = "call_discarded" // a tool returned after its call was given up at the deadline; its result was discarded
	// Durable runs (a store other than the ephemeral one).
	ApprovalRequested Kind = "approval_requested" // a step waits for a person (approval, or unknown after a crash)
	ApprovalDecided   Kind = "approval_decided"   // a person's decision was applied on resume
	RunParked         Kind = "run_waiting"        // nothing can advance until a person decides; the run is parked
	RunResumed        Kind = "run_resumed"        // a process took the run up again from its journal
	// CorrectiveRetry: a model's reply broke the step's output schema (or
	// the planner's plan broke validation) and one corrective request
	// follows within the same attempt. It is not a failed attempt.
	CorrectiveRetry Kind = "corrective_retry"
	ToolProcess     Kind = "tool_process" // a non-idempotent step's tool started a process group (Process)
	// AgentTurn is a turn of an agent step as the model gave it (Data: the
	// agent.Turn), committed before its calls run; AgentCall is one call's
	// outcome (Data: the agent.Call, Turn: its turn).
	AgentTurn Kind = "agent_turn"
	AgentCall Kind = "agent_call"
)

// RunStatus is the state of a run (shared/DESIGN.md §3).
type RunStatus string

// Run states.
const (
	RunPending   RunStatus = "pending"
	RunRunning   RunStatus = "running"
	RunWaiting   RunStatus = "waiting"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// StepStatus is the state of a step (shared/DESIGN.md §3).
type StepStatus string

// Step states.
const (
	StepPending   StepStatus = "pending"
	StepReady     StepStatus = "ready"
	StepRunning   StepStatus = "running"
	StepSucceeded StepStatus = "succeeded"
	StepDefaulted StepStatus = "defaulted" // on_error: skip used fallback_value
	StepFellBack  StepStatus = "fell_back" // on_error: fallback produced the output
	StepSkipped   StepStatus = "skipped"   // when was false, or an upstream was skipped
	StepFailed    StepStatus = "failed"
	StepWaiting   StepStatus = "waiting"
	StepBlocked   StepStatus = "blocked"
	StepUnknown   StepStatus = "unknown"
)

// Settled reports whether s is final.
func (s StepStatus) Settled() bool {
	switch s {
	case StepSucceeded, StepDefaulted, StepFellBack, StepSkipped, StepFailed, StepBlocked, StepUnknown:
		return true
	}
	return false
}

// Origin says which side a failure came from, so a trace can answer "was it
// the model's fault or the tool's?".
type Origin string

// Failure origins.
const (
	OriginModel  Origin = "model"  // the model call failed or its output was rejected
	OriginTool   Origin = "tool"   // the tool failed, returned bad output, or panicked
	OriginEngine Origin = "engine" // a when/gate/template/budget/policy decision of the runtime
)

// Event is one entry of a run's record. Fields that do not apply are zero and
// are left out of the JSONL encoding.
type Event struct {
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	Kind     Kind      `json:"kind"`
	RunID    string    `json:"run_id"`
	Flow     string    `json:"flow,omitempty"`
	StepID   string    `json:"step_id,omitempty"`
	StepType string    `json:"step_type,omitempty"`
	Attempt  int       `json:"attempt,omitempty"`
	Status   string    `json:"status,omitempty"`
	// DurationMS is what the event measured (a step, a model call, the
	// run), in milliseconds with nanosecond precision: 0.137 is 137 µs.
	// It is set on every event that measures something; it is left out
	// only where nothing ran (a skipped step, run_started). Journals
	// written before it was fractional hold whole numbers, read the same.
	DurationMS float64 `json:"duration_ms,omitempty"`
	Model      string  `json:"model,omitempty"`
	Tool       string  `json:"tool,omitempty"`
	TokensIn   int     `json:"tokens_in,omitempty"`
	TokensOut  int     `json:"tokens_out,omitempty"`
	ErrorClass string  `json:"error_class,omitempty"`
	Error      string  `json:"error,omitempty"`
	Origin     Origin  `json:"origin,omitempty"`
	Budget     string  `json:"budget,omitempty"`
	Decision   string  `json:"decision,omitempty"`
	// PlanStep names the plan step of a plan step's events.
	PlanStep  string `json:"plan_step,omitempty"`
	InputSHA  string `json:"input_sha256,omitempty"`
	OutputSHA string `json:"output_sha256,omitempty"`
	Preview   string `json:"preview,omitempty"`
	// Process is the process group a tool started (tool_process events).
	Process Process `json:"process,omitzero"`
	// Turn is the agent turn of agent_turn and agent_call events.
	Turn int `json:"turn,omitempty"`
	// Data is the record an event carries whole, as JSON text (agent_turn,
	// agent_call): what a resume rebuilds the agent's transcript from.
	Data string `json:"data,omitempty"`
}

// Process identifies an operating-system process group that a tool
// started, and the process that started it, so that a resume in another
// process can find what is left of the group and stop it.
type Process struct {
	// PGID is the group's id (its leader's PID).
	PGID int `json:"pgid"`
	// Start is the leader's start time in clock ticks since boot (Linux);
	// 0 where unknown. With Boot it tells the group from a reused id.
	Start uint64 `json:"start,omitempty"`
	// Boot is the id of the boot Start counts from; "" where unknown.
	Boot string `json:"boot,omitempty"`
	// Owner is the lease owner of the process that started the tool
	// (engine.NewOwner: host, PID and PID namespace).
	Owner string `json:"owner,omitempty"`
}

// Sink receives events. Emit is called from the run's scheduler goroutine
// (one run never calls Emit concurrently with itself; different runs may) and
// must not retain e past the call. Emit must not block for long: it is on the
// hot path of every step.
type Sink interface {
	Emit(ctx context.Context, e *Event)
}

// Multi fans an event out to several sinks in order. Nil sinks are dropped.
func Multi(sinks ...Sink) Sink {
	var out multi
	for _, s := range sinks {
		if s != nil {
			out = append(out, s)
		}
	}
	switch len(out) {
	case 0:
		return Discard
	case 1:
		return out[0]
	}
	return out
}

type multi []Sink

func (m multi) Emit(ctx context.Context, e *Event) {
	for _, s := range m {
		s.Emit(ctx, e)
	}
}

// Discard is a Sink that drops every event.
var Discard Sink = discard{}

type discard struct{}

func (discard) Emit(context.Context, *Event) {}

// Millis converts d to the milliseconds of Event.DurationMS.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Duration returns DurationMS as a time.Duration.
func (e *Event) Duration() time.Duration {
	return time.Duration(math.Round(e.DurationMS * float64(time.Millisecond)))
}

// PreviewBytes is the length to which Event.Preview is cut.
const PreviewBytes = 200
