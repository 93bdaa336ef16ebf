package store

import (
	"encoding/json"
	"time"
)

// CallKind says what a call record's invocation called.
type CallKind string

// Call kinds.
const (
	CallTool  CallKind = "tool"
	CallModel CallKind = "model"
)

// CallStatus is where a recorded call stands.
type CallStatus string

// Call statuses.
const (
	// CallStarted: the call was about to be made when this was committed
	// (written before the side effect of a tool that is not idempotent).
	// A run resumed with a call still started does not know whether its
	// effect happened.
	CallStarted CallStatus = "started"
	// CallSucceeded: the call returned an output that passed its checks
	// (Output holds it).
	CallSucceeded CallStatus = "succeeded"
	// CallFailed: the call was refused, failed, timed out or was
	// cancelled (Error and ErrorClass say how).
	CallFailed CallStatus = "failed"
	// CallLate: a call given up at its deadline returned afterwards; what
	// it returned was discarded.
	CallLate CallStatus = "late"
)

// Settled reports whether the call's outcome is known.
func (s CallStatus) Settled() bool { return s != CallStarted && s != "" }

// Call is the record of one tool or model invocation inside a step: where
// in the step it was made, what it called, with which args (by digest),
// and how it ended. The engine keeps them for the calls a step's row
// alone cannot describe — for_each items, plan steps, agent turns — so a
// resumed run continues a half-done step where it stopped; a plain step
// of one call has none (its step row says it all).
//
// Key is the call's idempotency key (package invoke), unique in its run:
// committing a record with a key the run has replaces that record (a call
// recorded as started, then settled).
type Call struct {
	RunID  string `json:"run_id"`
	StepID string `json:"step_id"`
	Key    string `json:"key"`
	// Item is the for_each item (from 0), or -1 for a call outside one.
	Item int `json:"item"`
	// Round is the repeat round (from 1), 0 outside a repeat loop.
	Round int `json:"round,omitempty"`
	// Plan and PlanStep place a call of a plan step: the plan's number in
	// the step (1, then 1 more per replan) and the plan step's id.
	Plan     int    `json:"plan,omitempty"`
	PlanStep string `json:"plan_step,omitempty"`
	// Turn and Index place an agent's call: its turn and its index among
	// the turn's calls (both from 1; 0 outside an agent).
	Turn  int `json:"turn,omitempty"`
	Index int `json:"index,omitempty"`
	// Fallback marks the call of a step's fallback.
	Fallback bool `json:"fallback,omitempty"`
	// Attempt is the attempt of the step (or of its item) the call was
	// made in, from 1.
	Attempt int      `json:"attempt"`
	Kind    CallKind `json:"kind"`
	// Name is the tool's or the model's name.
	Name string `json:"name"`
	// ArgsSHA is the sha256 (hex) of the args' canonical JSON, or of the
	// prompt for a model call.
	ArgsSHA string     `json:"args_sha256,omitempty"`
	Status  CallStatus `json:"status"`
	// Output is the call's output as canonical JSON, when it succeeded.
	// Records keep it inline: a step's max_output_bytes bounds it.
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorClass string          `json:"error_class,omitempty"`
	Error      string          `json:"error,omitempty"`
	// TokensIn and TokensOut are a model call's tokens.
	TokensIn  int           `json:"tokens_in,omitempty"`
	TokensOut int           `json:"tokens_out,omitempty"`
	StartedAt time.Time     `json:"started_at,omitzero"`
	Duration  time.Duration `json:"duration,omitempty"`
}
