package sched

import (
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/store"
)

// Waiter is who a step waits for before it runs.
type Waiter int

// The waiters.
const (
	NoOne  Waiter = iota
	Person        // an approval step, or a step with approval: required
	Agent         // a submit or source step: an agent's output settles it
)

// WaitsFor says who step s waits for before it runs. A step type that
// waits for someone has its case here; everything else about a step type
// is the driver's (package engine's kind table).
func WaitsFor(s *flow.Step) Waiter {
	switch {
	case s.Type == flow.Submit || s.Type == flow.Source:
		return Agent
	case s.Type == flow.Approval || s.ApprovalRequired:
		return Person
	}
	return NoOne
}

// Action is what Answer decides for a step about to start.
type Action int

// Answer's actions.
const (
	// RunIt: start the step (it needs nobody, or was approved).
	RunIt Action = iota
	// AskPerson: park the step for a person's approval (store.KindApproval).
	AskPerson
	// AskAgent: park the step for an agent's submission
	// (store.KindSubmission); an earlier approval is no output.
	AskAgent
	// RunAgain: start the step again at Answer.Attempt (a person approved
	// a step whose effect was unknown, or that escalated).
	RunAgain
	// RunApproved: start the step with the arguments the person approved.
	RunApproved
	// Approve: settle an approval step as approved.
	Approve
	// SettleOutput: settle the step with the output the person (or agent)
	// gave; it must fit the step's output_schema and gate.
	SettleOutput
	// Reject: settle the step failed; an escalated step fails with its own
	// error (Answer.Escalated).
	Reject
)

// Answer is the decision Answer returns.
type Answer struct {
	Do Action
	// Attempt is the attempt RunAgain starts.
	Attempt int
	// Escalated: the rejected approval was an escalation of the step's
	// failure (on_error: escalate, or a failed premise).
	Escalated bool
	// Decided: the approval was answered; the driver journals the answer
	// (approval_decided) and calls Decided.
	Decided bool
}

// Answered is the latest approval of a step, as the store holds it; the
// zero value is none.
type Answered struct {
	Status store.ApprovalStatus
	Kind   store.ApprovalKind
}

// Answer decides what step i, taken off the ready queue and admitted,
// does given its latest approval a: run, wait for a person or an agent,
// or settle as the answer says.
func (m *Machine) Answer(i int, a Answered) Answer {
	s := m.f.Steps[i]
	w := WaitsFor(s)
	if w == Agent && a.Status != store.ApprovalSettled && a.Status != store.ApprovalRejected {
		return Answer{Do: AskAgent}
	}
	if a.Status == "" || a.Status == store.ApprovalPending {
		if w == NoOne {
			return Answer{Do: RunIt}
		}
		return Answer{Do: AskPerson}
	}
	switch a.Status {
	case store.ApprovalRejected:
		return Answer{Do: Reject, Decided: true, Escalated: a.Kind == store.KindEscalation || a.Kind == store.KindPremise}
	case store.ApprovalSettled:
		return Answer{Do: SettleOutput, Decided: true}
	}
	// approved
	switch {
	case s.Type == flow.Approval:
		return Answer{Do: Approve, Decided: true}
	case a.Kind == store.KindUnknown || a.Kind == store.KindEscalation || a.Kind == store.KindPremise:
		return Answer{Do: RunAgain, Attempt: m.attempts[i] + 1, Decided: true}
	case a.Kind == store.KindApproval && s.Type == flow.Tool:
		return Answer{Do: RunApproved, Decided: true}
	}
	return Answer{Do: RunIt, Decided: true}
}
