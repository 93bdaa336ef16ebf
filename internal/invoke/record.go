package invoke

import (
	"time"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// Outcome is how a call ended.
type Outcome string

// Outcomes.
const (
	OK          Outcome = "ok"           // the output passed every check
	InvalidArgs Outcome = "invalid_args" // the args broke the input schema; not called
	Blocked     Outcome = "blocked"      // the gate did not allow it (or failed); not called
	// AwaitingApproval: the call needs a person's approval (Request.RequireApproval,
	// or the gate's require_approval) and has none yet; not called.
	AwaitingApproval Outcome = "awaiting_approval"
	Failed           Outcome = "failed"         // the tool returned an error
	Panicked         Outcome = "panicked"       // the tool panicked
	InvalidOutput    Outcome = "invalid_output" // the output is not JSON or breaks the output schema
	// CheckFailed: the call succeeded (Output holds what it returned), and
	// the post-check of its effect failed (safety.PostChecker).
	CheckFailed Outcome = "check_failed"
	// PremiseFailed: the call succeeded (Output holds what it returned),
	// and the output contradicts its tool's premise (tool.Spec.Premise):
	// the error is a *tool.PremiseError, and the caller pauses the run.
	PremiseFailed Outcome = "premise_failed"
	TimedOut      Outcome = "timed_out" // the deadline passed before the tool returned
	Cancelled     Outcome = "cancelled" // the context was cancelled before the tool returned
	// Late is the second record of a TimedOut or Cancelled call: the tool
	// returned after all (Err is its error, if any) and its result was
	// discarded. A tool that honours its context and returns the context's
	// error gets no Late record.
	Late Outcome = "late"
)

// Returned reports whether the tool returned an output that passed its
// schema: OK, or PremiseFailed (its effect happened, and its output is
// on record, though it contradicts the tool's premise).
func (o Outcome) Returned() bool { return o == OK || o == PremiseFailed }

// Record is the call record of one invocation.
type Record struct {
	At  Position
	Key string
	// Tool is the tool's name.
	Tool string
	// Args are the args the tool was (or would have been) called with;
	// shared, not copied.
	Args any
	// Output is the normalised output of an OK call; shared, not copied.
	Output any
	// Provenance is the request's: where each argument came from; shared.
	Provenance safety.Provenance
	Outcome    Outcome
	// Err is why the call did not succeed (nil for OK).
	Err error
	// Abandoned marks a TimedOut or Cancelled call whose tool had not
	// returned: it runs on, unobserved, and a Late record follows if it
	// returns anything but its context's error.
	Abandoned bool
	// Gate is the configured gate's decision on the call and what it saw
	// (nil when no gate was asked: safety.AllowAll, or the call stopped
	// at its args).
	Gate *Gated
	// Invalidated are the invalidated resources the call touched (see
	// Invalid); nil for most calls.
	Invalidated []journal.InvalidatedUse
	// Start is when the pipeline took the call; Duration runs to its
	// outcome (for Late: to the tool's return).
	Start    time.Time
	Duration time.Duration
}

// Gated is a decision of the gate, with what it saw of a call a model
// chose or whose inferred arguments a tool result verified (Basis; nil
// otherwise: the flow's provenance says it all).
type Gated struct {
	Decision safety.Decision
	Basis    *safety.Basis
}

// ArgsDigest returns the sha256 (hex) of the args' canonical JSON, or ""
// when they have none. It is computed on demand: the hot path does not pay
// for it.
func (r *Record) ArgsDigest() string {
	b, err := value.Canonical(r.Args)
	if err != nil {
		return ""
	}
	return value.Digest(b)
}

// Recorder receives what the pipeline decides and does. Its methods may be
// called concurrently (calls in parallel, and a Late record from the
// goroutine of a tool that returned after its deadline, possibly after the
// caller moved on) and must not block for long.
type Recorder interface {
	// GateDecided receives every decision of a configured gate, before the
	// call is made or refused, with what the gate saw (inv is the
	// pipeline's; read it during the call, do not keep it).
	GateDecided(at Position, inv *safety.Invocation, d safety.Decision)
	// Called receives the record of every call once its outcome is known,
	// and a second record (Outcome Late) if a timed-out tool returns.
	Called(rec Record)
}

// A Starter is a Recorder that is told of a call just before it is made —
// after the args and the gate passed — so it can make the call's start
// durable before any side effect (a durable run records the start of a
// call to a tool that is not idempotent). An error stops the call: the
// pipeline returns it, classed cancelled unless it has a class, with
// Outcome Cancelled, and the tool is not called. rec (without outcome and
// timing) and spec are copies: the hot path allocates nothing for them.
type Starter interface {
	Starting(rec Record, spec tool.Spec) error
}
