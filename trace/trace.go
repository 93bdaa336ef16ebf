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
}

// Sink receives events.
//
// An event handed to Emit is the sink's to keep: the caller never changes
// or reuses it afterwards, so a sink may hold on to e (queue it, batch it,
// export it later) without copying — unless the sink is a Borrower, which
// promises to keep nothing. It is shared, read-only: the same
// event goes to every sink of a Multi and to the store's journal, so Emit
// must not modify it.
//
// One run's events arrive in sequence order (Seq 1, 2, …) and never
// concurrently with each other; different runs may call Emit concurrently.
// Emit is called outside the run's locks, but synchronously: the run waits
// for it, and a run returns only once every one of its events was handed
// to the sink. A sink that may be slow (a network exporter, a stream to a
// client) belongs behind [NewAsync], which never lets it stall a run.
type Sink interface {
	Emit(ctx context.Context, e *Event)
}

// Borrower is a Sink that only reads each event while Emit runs and keeps
// no reference to it once Emit returns (it may keep copies of fields: strings
// do not change). The engine then recycles the memory of a run's events
// instead of allocating each one. The sinks of trace/jsonl and
// trace/slogsink, and Discard, are Borrowers; any Sink that is not one may
// keep every event.
type Borrower interface {
	Sink
	// BorrowsEvents marks the sink as a Borrower; it is never called.
	BorrowsEvents()
}

// Borrows reports whether s is a Borrower.
func Borrows(s Sink) bool {
	_, ok := s.(Borrower)
	return ok
}

// Multi fans an event out to several sinks in order: each gets the same
// *Event (see Sink: it is shared and read-only). Nil sinks are dropped. The
// result is a Borrower when every sink is.
func Multi(sinks ...Sink) Sink {
	var out multi
	borrows := true
	for _, s := range sinks {
		if s != nil {
			out = append(out, s)
			borrows = borrows && Borrows(s)
		}
	}
	switch {
	case len(out) == 0:
		return Discard
	case len(out) == 1:
		return out[0]
	case borrows:
		return borrowingMulti{out}
	}
	return out
}

type multi []Sink

func (m multi) Emit(ctx context.Context, e *Event) {
	for _, s := range m {
		s.Emit(ctx, e)
	}
}

type borrowingMulti struct{ multi }

func (borrowingMulti) BorrowsEvents() {}

// Discard is a Sink that drops every event.
var Discard Sink = discard{}

type discard struct{}

func (discard) Emit(context.Context, *Event) {}
func (discard) BorrowsEvents()               {}

// Millis converts d to the milliseconds of Event.DurationMS.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Duration returns DurationMS as a time.Duration.
func (e *Event) Duration() time.Duration {
	return time.Duration(math.Round(e.DurationMS * float64(time.Millisecond)))
}

// PreviewBytes is the length to which Event.Preview is cut.
const PreviewBytes = 200
