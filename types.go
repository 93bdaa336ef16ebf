package rein

import (
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// The types of a run, so that a program that loads and runs flows needs
// only this package (and package tool for its Go tools). Each is an alias
// of the type in the package that owns it.
type (
	// RunConfig wires a run: its Store (nil keeps it in memory), trace
	// Sink, policy Gate, Clock and lease settings (engine.Config). The
	// project supplies the tools and models.
	RunConfig = engine.Config
	// RunOptions are per-run settings: a fixed RunID, the Session.
	RunOptions = engine.RunOptions
	// Result is what a run did: status, outputs, every step's result,
	// usage, duration, the error.
	Result     = engine.Result
	StepResult = engine.StepResult
	RunError   = engine.RunError
	Usage      = engine.Usage
	// RunStatus and StepStatus are the states of shared/DESIGN.md §3.
	RunStatus  = trace.RunStatus
	StepStatus = trace.StepStatus
	// Store is the port of durable runs; OpenStore opens one.
	Store = store.Store
	// Approval is a decision a waiting run waits on (Result.Pending).
	Approval             = store.Approval
	DecideApprovalParams = store.DecideApprovalParams
	ApprovalStatus       = store.ApprovalStatus
)

// Run states.
const (
	StatusPending   = trace.RunPending
	StatusRunning   = trace.RunRunning
	StatusWaiting   = trace.RunWaiting // a person (or an agent) must act before it goes on
	StatusSucceeded = trace.RunSucceeded
	StatusFailed    = trace.RunFailed
	StatusCancelled = trace.RunCancelled
)

// Step states.
const (
	StepPending   = trace.StepPending
	StepReady     = trace.StepReady
	StepRunning   = trace.StepRunning
	StepSucceeded = trace.StepSucceeded
	StepDefaulted = trace.StepDefaulted // on_error: skip used fallback_value
	StepFellBack  = trace.StepFellBack  // on_error: fallback produced the output
	StepSkipped   = trace.StepSkipped
	StepFailed    = trace.StepFailed
	StepWaiting   = trace.StepWaiting
	StepBlocked   = trace.StepBlocked
	StepUnknown   = trace.StepUnknown // its process died while it ran; a person decides
)

// Decisions on an approval (DecideApprovalParams.Status, Decision.Status).
const (
	ApprovalApproved = store.ApprovalApproved
	ApprovalRejected = store.ApprovalRejected
	// ApprovalSettled records a step's output by hand.
	ApprovalSettled = store.ApprovalSettled
)
