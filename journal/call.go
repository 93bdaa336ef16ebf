package journal

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
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
	// cancelled (Error, ErrorClass and Outcome say how).
	CallFailed CallStatus = "failed"
	// CallLate: a call given up at its deadline returned afterwards; what
	// it returned was discarded.
	CallLate CallStatus = "late"
	// CallWaiting: the call waits for a person's approval (the gate's
	// require_approval, or its tool's approval: required); it was not
	// made.
	CallWaiting CallStatus = "waiting"
)

// How a call in doubt was reconciled (Call.Reconciled): its tool's check
// (tool.Checker) found that it took effect (the record holds the output
// the check returned), or that it did not (the call was made again, or a
// person was asked).
const (
	ReconciledHappened    = "check: happened"
	ReconciledNotHappened = "check: did not happen"
)

// Settled reports whether the call's outcome is known.
func (s CallStatus) Settled() bool { return s != CallStarted && s != CallWaiting && s != "" }

// Call is the one record of one invocation — a tool step's call, a
// for_each item's, a repeat round's, a fallback's, a plan step's, an
// agent's call, a compensation — with its whole story: where it was made
// and its idempotency key, what it called with which args (by digest,
// and the args themselves where they are kept), where the args came from,
// what the gate decided, the effect its tool declares and what the call
// touched, and how it ended. A call event (Kind CallRecorded, Event.Call)
// carries it; a call recorded again under its Key (started, then settled;
// waiting, then approved and made) replaces the earlier record
// (FoldCalls). Package store returns a run's records with Calls.
//
// Journals of version 1 kept the same story in up to four records: a row
// of the store's calls table (the calls of for_each items, plan steps and
// an agent's cut observations), and the events gate_decision, call_effect
// (Data: an Effect) and agent_call (Data: the agent's call as JSON);
// version 2 still kept an agent's call in an agent_call event, which
// version 3 folds into Agent. They still read: the store returns those
// rows as Calls, and the views and a resumed agent read the old events
// beside call events.
type Call struct {
	// RunID is the run; a call event leaves it out (its event names the
	// run) and readers set it.
	RunID  string `json:"run_id,omitempty"`
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
	Attempt int `json:"attempt"`
	// Remedy is "undo" or "compensate" for a call that takes another back
	// (its Key extends that call's).
	Remedy string   `json:"remedy,omitempty"`
	Kind   CallKind `json:"kind"`
	// Name is the tool's or the model's name.
	Name string `json:"name"`
	// ArgsSHA is the sha256 (hex) of the args' canonical JSON, or of the
	// prompt for a model call.
	ArgsSHA string `json:"args_sha256,omitempty"`
	// Provenance says where each argument came from, by JSON pointer.
	Provenance []ArgProvenance `json:"provenance,omitempty"`
	// Gate are the policy gate's decisions on the call (none without a
	// configured gate).
	Gate []CallGate `json:"gate,omitempty"`
	// Effect is the effect the call's tool declares and what the call
	// touched; nil for a tool without an effect, or a call that did not
	// reach its tool.
	Effect *DeclaredEffect `json:"effect,omitempty"`
	Status CallStatus      `json:"status"`
	// Outcome is how the pipeline saw the call end (ok, failed,
	// timed_out, blocked, awaiting_approval, …; package invoke).
	Outcome string `json:"outcome,omitempty"`
	// Reconciled says how a call found in doubt after a crash was settled
	// without a person (ReconciledHappened, ReconciledNotHappened); empty
	// for a call whose outcome its own process recorded.
	Reconciled string `json:"reconciled,omitempty"`
	// Output is the call's output as canonical JSON, when it succeeded:
	// kept for the calls of for_each items and plan steps (a step's
	// max_output_bytes bounds it), and an agent's call whose observation
	// was cut.
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorClass string          `json:"error_class,omitempty"`
	Error      string          `json:"error,omitempty"`
	// TokensIn and TokensOut are a model call's tokens.
	TokensIn  int           `json:"tokens_in,omitempty"`
	TokensOut int           `json:"tokens_out,omitempty"`
	StartedAt time.Time     `json:"started_at,omitzero"`
	Duration  time.Duration `json:"duration,omitempty"`
	// Agent is what an agent's loop keeps of its call; nil for other
	// calls.
	Agent *AgentRecord `json:"agent,omitempty"`
	// Invalidated are the resources the call touched that a remediation
	// of a run marked invalid (the store's registry): the call was
	// flagged, and its output carries origin invalidated.
	Invalidated []InvalidatedUse `json:"invalidated,omitempty"`
}

// InvalidatedUse is one invalidated resource a call touched, and what
// invalidated it.
type InvalidatedUse struct {
	Resource string `json:"resource"`
	// RunID, CallKey and Premise name the frozen call that made it
	// invalid and the premise its remediation acted on.
	RunID   string `json:"run_id"`
	CallKey string `json:"call_key"`
	Premise string `json:"premise,omitempty"`
	// After: the resource renders only from the call's output, so it was
	// found after the call (flagged, not held).
	After bool `json:"after,omitempty"`
}

// dropEmpty makes c's empty lists nil, as its encoding (which omits them)
// reads back, so a record reads the same before and after it is written
// again.
func (c *Call) dropEmpty() {
	if len(c.Provenance) == 0 {
		c.Provenance = nil
	}
	if len(c.Invalidated) == 0 {
		c.Invalidated = nil
	}
	if len(c.Gate) == 0 {
		c.Gate = nil
	}
	if a := c.Agent; a != nil && len(a.Consumed) == 0 {
		a.Consumed = nil
	}
	if x := c.Effect; x != nil {
		for _, l := range []*[]string{&x.Tags, &x.Reads, &x.Writes, &x.Sends, &x.Unrendered} {
			if len(*l) == 0 {
				*l = nil
			}
		}
	}
}

// CallGate is one decision of the policy gate on a call.
type CallGate struct {
	// Verdict is allow, block, require_approval or require_review.
	Verdict string `json:"verdict"`
	// Why is the decision's reason: "rule <name>: <reason>", or the
	// reason alone.
	Why string `json:"why,omitempty"`
	// Basis is what the gate saw besides the tool and args (the JSON of a
	// safety.Basis: provenance, verified arguments, a model's declaration
	// and its checked claims), for a call a model chose or whose inferred
	// arguments a tool result verified.
	Basis json.RawMessage `json:"basis,omitempty"`
	// LogOnly are the log-only rules (enforce: false) that held: what they
	// would have decided, recorded and never applied.
	LogOnly []LoggedRule `json:"log_only,omitempty"`
}

// LoggedRule is what a log-only rule would have decided on a call.
type LoggedRule struct {
	Verdict string `json:"verdict"`
	// Why is "rule <name>: <reason>".
	Why string `json:"why"`
}

// DeclaredEffect is what a call's tool declares of its effect, and what the
// call touched (as Effect holds it).
type DeclaredEffect struct {
	Effect        string   `json:"effect"`
	Reversibility string   `json:"reversibility,omitempty"`
	Idempotent    bool     `json:"idempotent,omitempty"`
	Tags          []string `json:"tags,omitempty"`
	Reads         []string `json:"reads,omitempty"`
	Writes        []string `json:"writes,omitempty"`
	Sends         []string `json:"sends,omitempty"`
	Unrendered    []string `json:"unrendered,omitempty"`
	// Compensation is the call that takes this one back (see Effect).
	Compensation *Compensation `json:"compensation,omitempty"`
}

// AgentRecord is what an agent's loop keeps of one of its calls besides
// the call record's own fields (Key, Turn, Index, Name: the tool, ArgsSHA,
// Attempt): the model's id for it, the args as the model wrote them, its
// status in the loop, what the model was shown and the approvals it used.
// With them the call record is the agent's transcript entry of the call,
// which a resume rebuilds the loop's session from and the views read
// (journal version 1 kept it as JSON in an agent_call event's Data). Its
// JSON values are the agent's records of those names as they are.
type AgentRecord struct {
	ID string `json:"id"`
	// Args are the arguments exactly as the model wrote them (not always
	// JSON: an invalid call keeps what the model sent).
	Args string `json:"args"`
	// Status is the loop's (chosen, ok, failed, invalid, blocked,
	// waiting, rejected, unknown).
	Status      string `json:"status"`
	Observation string `json:"observation,omitempty"`
	// Blob is the sha256 of the whole output when Observation was cut
	// (the record's Output holds it).
	Blob   string `json:"blob,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Rule says who asked for the approval the call waits for (the gate's
	// rule, or the tool's approval: required).
	Rule string `json:"rule,omitempty"`
	// Consumed are the people's approvals the call used, each once (a
	// resume never counts them again).
	Consumed []AgentConsumed `json:"consumed,omitempty"`
	// Plan, PlanRun, Provenance, Verified, Declaration and Claims are the
	// agent call's records of those names (an execute_plan call's wait
	// and sub-run; the traced provenance; the declaration and its claims).
	Plan        json.RawMessage `json:"plan,omitempty"`
	PlanRun     json.RawMessage `json:"plan_run,omitempty"`
	Provenance  json.RawMessage `json:"provenance,omitempty"`
	Verified    json.RawMessage `json:"verified,omitempty"`
	Declaration json.RawMessage `json:"declaration,omitempty"`
	Claims      json.RawMessage `json:"claims,omitempty"`
	// Sub is the sub-run of a call of an agent called as a tool: its
	// task, status, turns (each with its calls) and answer, as the agent
	// package's SubRun.
	Sub json.RawMessage `json:"sub,omitempty"`
}

// AgentConsumed is an approval an agent's call used: the approval's id
// (the store's row) and the call or plan step it named (turn<t>/call<c>,
// or turn<t>/call<c>/<plan step>).
type AgentConsumed struct {
	ID  string `json:"id"`
	Ref string `json:"ref"`
}

// TakesBack returns the key of the call c undoes or compensates, or ""
// when c is not an undo or compensation (its Key extends that call's with
// "/" and its Remedy).
func (c *Call) TakesBack() string {
	if c.Remedy == "" {
		return ""
	}
	k, ok := strings.CutSuffix(c.Key, "/"+c.Remedy)
	if !ok {
		return ""
	}
	return k
}

// EffectRecord is c's effect as the effect graph reads it (the record a
// call_effect event of version 1 carried), or nil when c has none.
func (c *Call) EffectRecord() *Effect {
	if c.Effect == nil {
		return nil
	}
	x := c.Effect
	e := &Effect{StepID: c.StepID, Key: c.Key, Round: c.Round, Fallback: c.Fallback, Attempt: c.Attempt, Plan: c.Plan,
		PlanStep: c.PlanStep, Turn: c.Turn, Call: c.Index, Remedy: c.Remedy, Tool: c.Name, Effect: x.Effect,
		Reversibility: x.Reversibility, Idempotent: x.Idempotent, Tags: x.Tags, Outcome: c.Outcome, Reads: x.Reads,
		Writes: x.Writes, Sends: x.Sends, Unrendered: x.Unrendered, ArgsSHA: c.ArgsSHA, Provenance: c.Provenance,
		Compensation: x.Compensation}
	if c.Item >= 0 {
		item := c.Item
		e.Item = &item
	}
	return e
}

// EffectOf is the effect record an event carries: a call_effect event's
// (version 1), or a call event's whose call has an effect. ok is false
// for any other event; err names a call_effect event that does not
// decode.
func EffectOf(ev *Event) (e *Effect, ok bool, err error) {
	switch {
	case ev.Kind == CallEffect:
		e, err = DecodeEffect(ev)
		return e, err == nil, err
	case ev.Kind == CallRecorded && ev.Call != nil && ev.Call.Effect != nil:
		return ev.Call.EffectRecord(), true, nil
	}
	return nil, false, nil
}

// Gated is one decision of the gate as the journal holds it, placed as a
// gate_decision event of version 1 placed it: Attempt is a plan step's
// plan number, else the step's attempt.
type Gated struct {
	StepID   string
	PlanStep string
	Attempt  int
	Turn     int
	Tool     string
	Decision CallGate
}

// GateDecisions are the gate's decisions in a run's events, in journal
// order: each gate_decision event (version 1, Data its basis), and each
// decision of a call record unless the key's record before it held the
// same decisions (a call recorded as started, then settled, was decided
// once).
func GateDecisions(events []*Event) []Gated {
	var out []Gated
	var last map[string][]CallGate
	for _, ev := range events {
		switch {
		case ev.Kind == GateDecision:
			out = append(out, Gated{StepID: ev.StepID, PlanStep: ev.PlanStep, Attempt: ev.Attempt, Turn: ev.Turn, Tool: ev.Tool,
				Decision: CallGate{Verdict: ev.Decision, Why: ev.Error, Basis: rawOf(ev.Data)}})
		case ev.Kind == CallRecorded && ev.Call != nil && len(ev.Call.Gate) > 0:
			c := ev.Call
			if last == nil {
				last = map[string][]CallGate{}
			}
			if sameGate(last[c.Key], c.Gate) {
				continue
			}
			last[c.Key] = c.Gate
			attempt := c.Attempt
			if c.PlanStep != "" {
				attempt = c.Plan
			}
			for _, d := range c.Gate {
				out = append(out, Gated{StepID: c.StepID, PlanStep: c.PlanStep, Attempt: attempt, Turn: c.Turn, Tool: c.Name, Decision: d})
			}
		}
	}
	return out
}

func rawOf(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func sameGate(a, b []CallGate) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Verdict != b[i].Verdict || a[i].Why != b[i].Why || !bytes.Equal(a[i].Basis, b[i].Basis) || !slices.Equal(a[i].LogOnly, b[i].LogOnly) {
			return false
		}
	}
	return true
}

// FoldCalls returns calls followed by the call records of events, one per
// Key — the last one recorded, except that a late record (the tool
// returned after its call was given up) keeps the story of the record it
// follows and changes only its status, error and duration — in the order
// their keys were first recorded; stepID, when not empty, keeps that
// step's. calls are records read from elsewhere (a store's calls table of
// version 1), older than every event. A record from an event gets the
// event's run when it names none; the records are the events' own (a
// caller that changes one copies it first).
func FoldCalls(calls []*Call, events []*Event, stepID string) []*Call {
	var out []*Call
	at := map[string]int{}
	add := func(c *Call) {
		if stepID != "" && c.StepID != stepID {
			return
		}
		i, ok := at[c.Key]
		if !ok {
			at[c.Key] = len(out)
			out = append(out, c)
			return
		}
		if c.Status == CallLate {
			late := *out[i]
			late.Status, late.ErrorClass, late.Error, late.Duration = c.Status, c.ErrorClass, c.Error, c.Duration
			if c.Outcome != "" {
				late.Outcome = c.Outcome
			}
			c = &late
		}
		out[i] = c
	}
	for _, c := range calls {
		add(c)
	}
	for _, ev := range events {
		if ev.Kind != CallRecorded || ev.Call == nil {
			continue
		}
		c := ev.Call
		if c.RunID == "" {
			cc := *c
			cc.RunID = ev.RunID
			c = &cc
		}
		add(c)
	}
	return out
}

// appendCall appends c's JSON, as encoding/json writes it (HTML left
// unescaped). A call event is not on the path of every step, so its
// record is encoding/json's.
func appendCall(dst []byte, c *Call) []byte {
	b := bytes.NewBuffer(dst)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		// a Call's fields all encode, but for an Output or a Basis that is
		// not JSON: those are written as null rather than losing the event.
		cc := *c
		cc.Output, cc.Gate, cc.Agent = nil, nil, nil
		_ = enc.Encode(&cc)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
