package journal

// Kind names what happened.
type Kind string

// Event kinds, in the order a run emits them. Kinds lists them all.
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
	// ToolProcess: a step's tool started a process group
	// (Event.Process), committed before the tool is waited for.
	ToolProcess Kind = "tool_process"
	// AgentTurn is a turn of an agent step as the model gave it
	// (Event.AgentTurn; before version 4 Event.Data: the agent loop's
	// turn as JSON), committed before its calls run;
	// AgentCall was one call's outcome (Data: the agent.Call, Turn: its
	// turn) in journals before version 3, which still read: since, an
	// agent's call is its call record (CallRecorded, Call.Agent).
	AgentTurn Kind = "agent_turn"
	AgentCall Kind = "agent_call"
	// SubmissionRejected: an agent's submission to a submit or source
	// step broke its contract or gate (Error lists every problem,
	// OutputSHA and Preview identify what was submitted); the step still
	// waits.
	SubmissionRejected Kind = "submission_rejected"
	// DeliveryPrepared: the workflow tool rendered the task's deliverables
	// (Preview names the folder, OutputSHA is the sha256 of the delivery's
	// manifest): the intent to deliver them.
	DeliveryPrepared Kind = "delivery_prepared"
	// RiskTier: the run's risk tier was assessed (at intake) or raised
	// (Data: the TierChange; StepID and Tool name what raised it).
	RiskTier Kind = "risk_tier"
	// ReviewDone: the reviewer judged the claims behind a pending call
	// (Data: the Review; Decision: the decision it made).
	ReviewDone Kind = "review"
	// CallEffect is an executed call of a tool with an effect (Data: the
	// Effect record): the run's effect graph.
	CallEffect Kind = "call_effect"
	// Remediated is one thing done about an executed call once a premise
	// failed or a saga compensates (Event.Remediation; Data before
	// version 3).
	Remediated Kind = "remediation"
	// CallRecorded is one invocation's record (Call: the Call), recorded
	// when the call starts (before the effect of a tool that is not
	// idempotent), waits for a person, or settles; the record of a key
	// recorded later replaces the earlier one. Since version 2 it holds
	// what gate_decision and call_effect events held, since version 3
	// what agent_call events held (Call.Agent).
	CallRecorded Kind = "call"
	// PayloadsSealed holds the payloads of its transition that hold a secret,
	// encrypted at rest (Data: the Sealed record), when rein.yaml
	// encryption: names a key: the records themselves keep them redacted,
	// as views show them; a resume opens these and reads what the live run
	// read. Never sent to a trace sink.
	PayloadsSealed Kind = "sealed"
	// RunRetried: a failed run was re-opened to go on (rein runs retry;
	// StepID: the step it was retried from, when one was named);
	// StepReopened: one settled step goes back to pending to run again
	// at its next attempt (Attempt: the attempt it had). Its effects stay
	// in the journal.
	RunRetried   Kind = "run_retried"
	StepReopened Kind = "step_reopened"
	// GuardrailTripped: a guardrail of an agent or llm step tripped
	// (Data: the GuardrailTrip; Decision: what it did, on_trip's stop or
	// ask; Turn: the agent turn whose answer tripped it, 0 for an input
	// guardrail and an llm step's).
	GuardrailTripped Kind = "guardrail"
)

// Kinds returns every event kind, in the order of their declaration. A
// kind added above belongs here too (a test checks the file).
func Kinds() []Kind {
	return []Kind{RunStarted, StepStarted, AttemptFailed, ModelCall, StepSettled, RunSettled, GateDecision,
		CallDiscarded, ApprovalRequested, ApprovalDecided, RunParked, RunResumed, CorrectiveRetry, ToolProcess,
		AgentTurn, AgentCall, SubmissionRejected, DeliveryPrepared, RiskTier, ReviewDone, CallEffect, Remediated, CallRecorded, PayloadsSealed,
		RunRetried, StepReopened, GuardrailTripped}
}

// RunStatus is the state of a run; docs/ARCHITECTURE.md "Run states" gives
// its transitions.
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

// StepStatus is the state of a step; docs/ARCHITECTURE.md "Step states"
// says what each means.
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
