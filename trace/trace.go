package trace

import (
	"context"
	"time"

	"github.com/reinhq/rein/journal"
)

// Kind is journal.Kind (an alias): the journal package owns the record
// types and their encoding; trace re-exports them.
type Kind = journal.Kind

// Event kinds (journal's, re-exported), in the order a run emits them.
const (
	RunStarted        = journal.RunStarted
	StepStarted       = journal.StepStarted
	AttemptFailed     = journal.AttemptFailed
	ModelCall         = journal.ModelCall
	StepSettled       = journal.StepSettled
	RunSettled        = journal.RunSettled
	GateDecision      = journal.GateDecision
	CallDiscarded     = journal.CallDiscarded
	ApprovalRequested = journal.ApprovalRequested
	ApprovalDecided   = journal.ApprovalDecided
	RunParked         = journal.RunParked
	RunResumed        = journal.RunResumed
	CorrectiveRetry   = journal.CorrectiveRetry
	ToolProcess       = journal.ToolProcess
	AgentTurn         = journal.AgentTurn
	AgentCall         = journal.AgentCall
	RiskTier          = journal.RiskTier
	ReviewDone        = journal.ReviewDone
	CallEffect        = journal.CallEffect
	Remediated        = journal.Remediated
	CallRecorded      = journal.CallRecorded
	PayloadsSealed    = journal.PayloadsSealed
	RunRetried        = journal.RunRetried
	StepReopened      = journal.StepReopened
	GuardrailTripped  = journal.GuardrailTripped
)

// Event kinds of the workflow tool (package bridge).
const (
	SubmissionRejected = journal.SubmissionRejected
	DeliveryPrepared   = journal.DeliveryPrepared
)

// RunStatus is journal.RunStatus (an alias), the state of a run.
type RunStatus = journal.RunStatus

// Run states (journal's, re-exported).
const (
	RunPending   = journal.RunPending
	RunRunning   = journal.RunRunning
	RunWaiting   = journal.RunWaiting
	RunSucceeded = journal.RunSucceeded
	RunFailed    = journal.RunFailed
	RunCancelled = journal.RunCancelled
)

// StepStatus is journal.StepStatus (an alias), the state of a step.
type StepStatus = journal.StepStatus

// Step states (journal's, re-exported).
const (
	StepPending   = journal.StepPending
	StepReady     = journal.StepReady
	StepRunning   = journal.StepRunning
	StepSucceeded = journal.StepSucceeded
	StepDefaulted = journal.StepDefaulted
	StepFellBack  = journal.StepFellBack
	StepSkipped   = journal.StepSkipped
	StepFailed    = journal.StepFailed
	StepWaiting   = journal.StepWaiting
	StepBlocked   = journal.StepBlocked
	StepUnknown   = journal.StepUnknown
)

// Origin is journal.Origin (an alias): which side a failure came from.
type Origin = journal.Origin

// Failure origins (journal's, re-exported).
const (
	OriginModel  = journal.OriginModel
	OriginTool   = journal.OriginTool
	OriginEngine = journal.OriginEngine
)

// Event is journal.Event (an alias): one entry of a run's record.
type Event = journal.Event

// Process is journal.Process (an alias): a process group a tool started.
type Process = journal.Process

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

// Millis converts d to the milliseconds of Event.DurationMS (journal.Millis).
func Millis(d time.Duration) float64 { return journal.Millis(d) }

// PreviewBytes is the length to which Event.Preview is cut (journal.PreviewBytes).
const PreviewBytes = journal.PreviewBytes
