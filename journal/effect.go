package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Effect is the record of one executed tool call whose tool has an effect
// (read, write, external or destructive): what it touched, where its
// arguments came from and how it can be taken back. A call_effect event
// carries it as JSON (Event.Data); together the records of a run are its
// effect graph (rein runs effects, rein graph --run).
type Effect struct {
	// StepID, Key and the position fields place the call: Key is its
	// idempotency key (package invoke), which names it uniquely in the run.
	StepID   string `json:"step_id"`
	Key      string `json:"key"`
	Item     *int   `json:"item,omitempty"` // a for_each item's index (nil: not an item)
	Round    int    `json:"round,omitempty"`
	Fallback bool   `json:"fallback,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Plan     int    `json:"plan,omitempty"`
	PlanStep string `json:"plan_step,omitempty"`
	Turn     int    `json:"turn,omitempty"`
	Call     int    `json:"call,omitempty"`
	// Remedy is "undo" or "compensate" for the call that takes another
	// call back (its Key extends that call's).
	Remedy string `json:"remedy,omitempty"`

	Tool          string   `json:"tool"`
	Effect        string   `json:"effect"`
	Reversibility string   `json:"reversibility,omitempty"`
	Idempotent    bool     `json:"idempotent,omitempty"`
	Tags          []string `json:"tags,omitempty"`
	// Outcome is how the call ended (invoke.Outcome: ok, failed,
	// timed_out, …); a call that did not return ok may still have had its
	// effect.
	Outcome string `json:"outcome"`
	// Reads, Writes and Sends are the tool's resources rendered over the
	// call's args and output: Reads for an effect read, Sends for an
	// external one, Writes for write and destructive. A resource whose
	// template could not be rendered (the output lacks the field) is left
	// out and named in Unrendered.
	Reads      []string `json:"reads,omitempty"`
	Writes     []string `json:"writes,omitempty"`
	Sends      []string `json:"sends,omitempty"`
	Unrendered []string `json:"unrendered,omitempty"`
	// ArgsSHA is the sha256 of the args' canonical JSON.
	ArgsSHA string `json:"args_sha256,omitempty"`
	// Provenance says where each argument came from, by JSON pointer.
	Provenance []ArgProvenance `json:"provenance,omitempty"`
	// Compensation is the call that takes this one back, rendered over its
	// args and output: the tool's undo (reversible) or compensate
	// (compensatable). Nil when the tool declares none or the call did not
	// return ok.
	Compensation *Compensation `json:"compensation,omitempty"`
}

// ArgProvenance is where the argument at Pointer came from (origins as
// safety.Origin spells them: user, user-mentioned, constant, inferred, db, tool:<name>).
type ArgProvenance struct {
	Pointer string   `json:"pointer"`
	Origins []string `json:"origins"`
}

// Compensation is a concrete call: a tool and the args it is called with.
type Compensation struct {
	// Kind is "undo" or "compensate".
	Kind string          `json:"kind"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
	// Error says why the declared compensation could not be rendered (an
	// args placeholder the call does not have); Args is then empty.
	Error string `json:"error,omitempty"`
}

// Remediation is the record of one thing done about an executed call
// once a premise failed or a run with on_failure: compensate failed: the
// call taken back (undo, compensate), frozen, or escalated to a person,
// and what that touched. A remediation event carries it
// (Event.Remediation; its Data in journals before version 3).
type Remediation struct {
	// Premise is the premise whose failure asked for it, or "saga" for a
	// flow's on_failure: compensate.
	Premise string `json:"premise"`
	// Key is the idempotency key of the call remediated; StepID its step.
	Key    string `json:"key"`
	StepID string `json:"step_id"`
	Tool   string `json:"tool"`
	// Action is undo, compensate or freeze.
	Action string `json:"action"`
	// Status is one of the Remedy… values.
	Status string `json:"status"`
	// Call is the compensation made (undo, compensate).
	Call *Compensation `json:"call,omitempty"`
	// Touched are the resources the compensation touched (its own
	// resources, rendered), Invalid the objects a freeze marked invalid
	// (the call's written and sent resources).
	Touched []string `json:"touched,omitempty"`
	Invalid []string `json:"invalid,omitempty"`
	// Escalation is the approval a person decides (rein runs approve RUN
	// Escalation), when the remediation was escalated.
	Escalation string `json:"escalation,omitempty"`
	// Decision is the person's decision of a resolved escalation
	// (approved, rejected, settled), Comment what they said and DecidedBy
	// who they are (the approval's decided_by).
	Decision  string `json:"decision,omitempty"`
	Comment   string `json:"comment,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"`
	Error     string `json:"error,omitempty"`
	// Tier is the risk tier an undo or compensation was assessed at (its
	// tool, its args' provenance, the run's tier as the floor), and
	// Control who let it through or must: automatic (tier 1–2), reviewer
	// (tier 3, review: configured) or person (tier 3 without a reviewer,
	// or the reviewer not satisfied; tier 4; an escalation approved).
	// Reason says why: the tier's reasons, the reviewer's decision.
	Tier    int    `json:"tier,omitempty"`
	Control string `json:"control,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Who lets an undo or compensation through (Remediation.Control).
const (
	ControlAutomatic = "automatic" // tier 1–2: made at once, through the gate
	ControlReviewer  = "reviewer"  // tier 3: the reviewer found it supported
	ControlPerson    = "person"    // a person approves it before it is made
)

// Remediation statuses.
const (
	RemedyDone      = "done"      // the undo or compensation returned ok
	RemedyFrozen    = "frozen"    // irreversible: its objects are marked invalid
	RemedyFailed    = "failed"    // the compensation failed or was refused; escalated
	RemedyEscalated = "escalated" // frozen and given to a person
	RemedyResolved  = "resolved"  // a person decided the escalation (Decision)
	// RemedyUnknown: the undo or compensation was dispatched (its call
	// record committed as started) and its process stopped before the
	// outcome was recorded; its tool is neither idempotent nor read-only,
	// so it is not made again blindly: escalated to a person.
	RemedyUnknown = "unknown"
)

// EncodeEffect returns e as the JSON an Event's Data holds.
func EncodeEffect(e *Effect) (string, error) {
	s, err := encodeData(e)
	if err != nil {
		return "", fmt.Errorf("encode effect of call %s: %w", e.Key, err)
	}
	return s, nil
}

// DecodeEffect reads the Data of a call_effect event; the error names the
// event.
func DecodeEffect(ev *Event) (*Effect, error) {
	e := new(Effect)
	if err := json.Unmarshal([]byte(ev.Data), e); err != nil {
		return nil, fmt.Errorf("run %s seq %d: call_effect record does not decode (%w): the database is damaged", ev.RunID, ev.Seq, err)
	}
	return e, nil
}

// EncodeRemediation returns m as the JSON an Event's Data holds.
func EncodeRemediation(m *Remediation) (string, error) {
	s, err := encodeData(m)
	if err != nil {
		return "", fmt.Errorf("encode remediation of call %s: %w", m.Key, err)
	}
	return s, nil
}

// DecodeRemediation reads the record of a remediation event: its
// Remediation, or its Data (journals before version 3); the error names
// the event.
func DecodeRemediation(ev *Event) (*Remediation, error) {
	if ev.Remediation != nil {
		return ev.Remediation, nil
	}
	m := new(Remediation)
	if err := json.Unmarshal([]byte(ev.Data), m); err != nil {
		return nil, fmt.Errorf("run %s seq %d: remediation record does not decode (%w): the database is damaged", ev.RunID, ev.Seq, err)
	}
	return m, nil
}

// appendRemediation appends m's JSON, as encoding/json writes it (HTML
// left unescaped); a remediation event is not on the path of every step.
func appendRemediation(dst []byte, m *Remediation) []byte {
	b := bytes.NewBuffer(dst)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		// only compensation args that are not JSON fail: written without
		// them rather than losing the event.
		mm := *m
		if mm.Call != nil {
			c := *mm.Call
			c.Args = nil
			mm.Call = &c
		}
		_ = enc.Encode(&mm)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// dropEmpty makes m's empty lists nil, as its encoding reads back.
func (m *Remediation) dropEmpty() {
	if len(m.Touched) == 0 {
		m.Touched = nil
	}
	if len(m.Invalid) == 0 {
		m.Invalid = nil
	}
}

// encodeData writes v as the journal's encoders write JSON: HTML left
// unescaped, no trailing newline.
func encodeData(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
