package rein

import (
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
)

// Error is the one error type of rein's operations: a class (fault.ClassOf
// works on it and on anything that wraps it), a message that says what
// happened without advice for any one surface, a Hint a program can switch
// on (Hint.Code) and Retryable, the one rule of whether the same request may
// succeed later. errors.Is reaches the cause (store.ErrNotFound,
// store.ErrConflict). It is package fault's, so every layer can return it.
type Error = fault.Error

// Transient marks err as retryable (a timeout, 429, 5xx, a reset). Go tools
// return it to have the engine retry with backoff. Nil stays nil.
func Transient(err error) error { return fault.TransientErr(err) }

// Business marks err as a failure that retrying will not fix (bad data, a
// refusal). Nil stays nil.
func Business(err error) error { return fault.BusinessErr(err) }

// Format marks err as malformed output. Nil stays nil.
func Format(err error) error { return fault.FormatErr(err) }

// The types of a run's result. They are the engine's (an implementation
// package), named here so that a program needs only this package to read
// what a run did.
type (
	// RunOptions are per-run settings: a fixed RunID (an idempotent
	// start: a second start with the same id returns that run), the
	// Session it belongs to.
	RunOptions = engine.RunOptions
	// Result is what a run did: status, outputs, every step's result,
	// usage, duration, the error, the approvals it waits for.
	Result = engine.Result
	// StepResult is what one step did.
	StepResult = engine.StepResult
	// RunError says why a run or a step did not succeed.
	RunError = engine.RunError
	// Usage counts a run's model calls and tokens.
	Usage = engine.Usage
)

// InputError is a run's input that does not fit its flow (not JSON values,
// or against the flow's inputs: schema); nothing ran. Missing names the
// fields the flow's templates read that the input lacks.
type InputError = engine.InputError

// ErrSessionRequired: the flow's idempotency is session_workflow_input_hash,
// so a run of it needs a session id (RunOptions.Session). A business error.
var ErrSessionRequired = engine.ErrSessionRequired

// ErrInterrupted is the cause a run stops with when its process is asked
// to stop (a signal, a worker's shutdown): it records nothing more and
// stays resumable. A cancelled error.
var ErrInterrupted = engine.ErrInterrupted

// DefaultLeaseTTL is how long a run's lease lasts without a heartbeat when
// Config.LeaseTTL is zero; the heartbeat renews it every third of it.
const DefaultLeaseTTL = engine.DefaultLeaseTTL
