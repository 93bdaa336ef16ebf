// Package trace is the Sink port a run's events go to. The events are the
// run's record, owned by package journal (Event, the states and kinds are
// re-exported here as aliases): the durable store persists exactly these,
// and `rein trace` summarises them. Adapters live in subpackages (trace/jsonl,
// trace/slogsink); the engine depends only on this package.
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

// Millis converts d to the milliseconds of Event.DurationMS (journal.Millis).
func Millis(d time.Duration) float64 { return journal.Millis(d) }

// PreviewBytes is the length to which Event.Preview is cut (journal.PreviewBytes).
const PreviewBytes = journal.PreviewBytes
