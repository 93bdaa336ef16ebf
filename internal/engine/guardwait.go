package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// An llm step's guardrail with on_trip: ask (a plain step of a durable
// run: the flow refuses it under for_each or repeat) makes the step wait
// for a person when it trips, instead of failing it. The step parks as an
// agent step does (parkAgent), one approval per tripped guardrail, step
// id "<step>/guardrail/<name>"; the trip is recorded first, committed at
// once, as a model call record of its own (key: the attempt's, then
// "/guardrail"): the guardrails that tripped and, for an output
// guardrail, the reply they tripped on. On resume, once every approval is
// decided, the step runs again at its attempt (restoreGuardWait) and
// applies the decisions: approve sends the prompt anyway (input) or
// accepts the recorded reply as it is, without asking the model again
// (output); reject fails the step with the guardrail error and the
// person's comment; settle is the step's output, the one the person
// wrote, checked against its output_schema. A decided guardrail is not
// checked again; the others are, as on any run.

// guardRefPrefix starts the ref of an llm step's guardrail approval.
const guardRefPrefix = "guardrail/"

// maxGuardReason bounds a trip's reason in the approval's message.
const maxGuardReason = 512

// guardTrip is one guardrail trip an llm step waits on.
type guardTrip struct {
	Name   string `json:"name"`
	Side   string `json:"side"`
	Reason string `json:"reason"`
}

// guardRecord is the Output of the call record of an llm step's trip.
type guardRecord struct {
	Trips []guardTrip `json:"trips"`
	// Reply is set when an output guardrail tripped: the model's text, and
	// Value its JSON value under an output_schema.
	Reply *struct {
		Text  string `json:"text"`
		Value any    `json:"value,omitempty"`
	} `json:"reply,omitempty"`
}

// guardResume is what a resumed llm step whose guardrails' trips were all
// decided carries into its attempt.
type guardResume struct {
	decisions map[string]*store.Approval // by guardrail name
	rec       guardRecord
}

// llmGuard checks an llm step's prompt or reply against its guardrails
// of one side, in order. A trip of one that stops is the guardrail error;
// the trips of those that ask are returned, to wait on, unless decided
// (gr): approved ones pass, a rejected one is the guardrail error, a
// settled one is returned (the step's output is the person's).
type llmGuard struct {
	r       *run
	j       *job
	m       model.Model
	name    string
	attempt int
	// plain: the step's own call (no for_each item, repeat round or
	// fallback), the only one that may wait; elsewhere a trip of a
	// guardrail that asks stops, as the others do.
	plain bool
	gr    *guardResume
}

func (g *llmGuard) check(ctx context.Context, input bool, text string, v any) (trips []guardTrip, settled *store.Approval, err error) {
	s := g.j.step
	for _, fg := range s.Guardrails {
		if fg.Input != input {
			continue
		}
		if fg.Ask && g.gr != nil {
			if a := g.gr.decisions[fg.Name]; a != nil {
				switch a.Status {
				case store.ApprovalApproved:
					continue
				case store.ApprovalSettled:
					return nil, a, nil
				default:
					return nil, nil, g.rejected(fg, a)
				}
			}
		}
		err := agent.Check(ctx, g.m, g.name, g.r.id, s.ID, g.attempt, guardrailsOf([]*flow.AgentGuardrail{fg}), input, text, v)
		var ge *agent.GuardrailError
		if err == nil || !fg.Ask || !g.plain || !errors.As(err, &ge) {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		trips = append(trips, guardTrip{Name: fg.Name, Side: fg.Side(), Reason: ge.Reason})
	}
	return trips, nil, nil
}

// rejected is the guardrail error of fg's trip a person rejected (a).
func (g *llmGuard) rejected(fg *flow.AgentGuardrail, a *store.Approval) error {
	why := "it tripped"
	for _, t := range g.gr.rec.Trips {
		if t.Name == fg.Name {
			why = t.Reason
		}
	}
	why += "; a person rejected going on"
	if a.DecidedBy != "" {
		why += " (" + a.DecidedBy + ")"
	}
	if a.Comment != "" {
		why += ": " + a.Comment
	}
	return fault.New(fault.Guardrail, &agent.GuardrailError{Name: fg.Name, Side: fg.Side(), Reason: why, Step: g.j.step.ID, Rejected: true})
}

// settledOutput is the output a person settled a trip with, checked
// against the step's output_schema.
func settledOutput(s *flow.Step, a *store.Approval) (any, error) {
	var out any
	if err := json.Unmarshal(a.Output, &out); err != nil {
		return nil, fault.BusinessErr(fmt.Errorf("llm step %s: the output settling %s is not JSON: %w", s.ID, a.StepID, err))
	}
	if err := checkSettled(s, out); err != nil {
		return nil, fmt.Errorf("llm step %s: %w", s.ID, err)
	}
	return out, nil
}

// wait records trips (and the reply they tripped on, for an output
// guardrail) and returns the step's wait for people; without a durable
// store it is a policy error saying so.
func (g *llmGuard) wait(trips []guardTrip, reply *string, v any) error {
	s, r := g.j.step, g.r
	if !r.d.on {
		return fault.Errorf(fault.Policy, "llm step %s: %s guardrail %s tripped and waits for a person's decision (on_trip: ask), which needs a durable store: run it with one (rein run --db, or engine.Config.Store)",
			s.ID, trips[0].Side, trips[0].Name)
	}
	rec := guardRecord{Trips: trips}
	if g.gr != nil {
		// the trips of this attempt a person decided stay in its record:
		// their decisions apply on the next resume too (restoreGuardWait).
		rec.Trips = append(append([]guardTrip(nil), g.gr.rec.Trips...), trips...)
	}
	if reply != nil {
		rec.Reply = &struct {
			Text  string `json:"text"`
			Value any    `json:"value,omitempty"`
		}{*reply, v}
	}
	out, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("engine: record the guardrail trip of llm step %s: %w", s.ID, err)
	}
	at := invoke.Position{RunID: r.id, StepID: s.ID, Attempt: g.attempt}
	r.recordCallEvent(&store.Call{StepID: s.ID, Key: at.Key() + "/guardrail", Item: -1, Attempt: g.attempt, Kind: store.CallModel,
		Name: g.name, Status: store.CallWaiting, Output: out, StartedAt: r.e.cfg.Clock.Now()}, true)
	w := &agentWait{pending: make([]agent.Pending, len(trips))}
	for k, t := range trips {
		what := "the prompt"
		if t.Side == "output" {
			what = "the reply"
		}
		w.pending[k] = agent.Pending{Ref: guardRefPrefix + t.Name, Kind: "approval", Guardrail: t.Name, Rule: "guardrail " + t.Name + " (on_trip: ask)",
			Trip:   &agent.GuardTrip{Name: t.Name, Side: t.Side, Reason: t.Reason},
			Reason: fmt.Sprintf("%s guardrail %s tripped on %s: %s", t.Side, t.Name, what, t.Reason)} // bounded and redacted by parkAgent
	}
	return w
}

// llmGuardMessage is the approval message of an llm step's guardrail trip
// (p, from llmGuard.wait).
func llmGuardMessage(s *flow.Step, p *agent.Pending) string {
	on := "approve to accept the reply as it is"
	if strings.HasPrefix(p.Reason, "input ") {
		on = "approve to send the prompt anyway"
	}
	return fmt.Sprintf("llm step %s: %s; %s, settle it with the step's output yourself (checked against its output_schema), or reject it (the step fails with a guardrail error and your comment)",
		s.ID, p.Reason, on)
}

// restoreGuardWait applies the approvals of llm step i's guardrail trips
// on resume: while any is pending the step waits; once all are decided it
// runs again at its attempt with the decisions and the recorded trip
// (guardResume). It reports false when the step has no such approval.
func (r *run) restoreGuardWait(i int, row *store.Step, approvals []*store.Approval, calls []*store.Call) (bool, error) {
	s := r.f.Steps[i]
	prefix := s.ID + "/" + guardRefPrefix
	found := false
	for _, a := range approvals {
		found = found || strings.HasPrefix(a.StepID, prefix)
	}
	if !found {
		return false, nil
	}
	latest := r.restoreAgent(i, row, approvals)
	if latest == nil {
		return true, nil
	}
	gr := &guardResume{decisions: map[string]*store.Approval{}}
	at := invoke.Position{RunID: r.id, StepID: s.ID, Attempt: max(row.Attempt, 1)}
	key := at.Key() + "/guardrail"
	for _, c := range calls {
		if c.Key == key && c.Status == store.CallWaiting {
			if err := json.Unmarshal(c.Output, &gr.rec); err != nil {
				return true, fmt.Errorf("engine: the guardrail trip of llm step %s of run %s does not decode: %w", s.ID, r.id, err)
			}
		}
	}
	// only the decisions on this attempt's trips (its record names them):
	// those of an earlier attempt (before a rein runs retry) do not apply.
	for _, t := range gr.rec.Trips {
		if a := latest[prefix+t.Name]; a != nil {
			gr.decisions[t.Name] = a
		}
	}
	if r.d.guards == nil {
		r.d.guards = map[int]*guardResume{}
	}
	r.d.guards[i] = gr
	return true, nil
}

// recordGuardTrip journals a guardrail event: guardrail name of step s
// tripped on side (input or output) for reason, and did what decision
// says (journal.GuardrailStopped or GuardrailAsked). The reason is
// bounded; the event's redaction hides secrets in it.
func (r *run) recordGuardTrip(s *flow.Step, attempt, turn int, name, side, reason, decision string) {
	trip := journal.GuardrailTrip{Name: name, Kind: guardKind(s, name), Side: side,
		Reason: value.Preview([]byte(reason), journal.MaxGuardrailReason)}
	data, err := json.Marshal(trip)
	if err != nil {
		return
	}
	r.record(trace.Event{Kind: trace.GuardrailTripped, StepID: s.ID, StepType: string(s.Type), Attempt: attempt, Turn: turn,
		Decision: decision, Data: string(data)})
}

// recordGuardStop journals the guardrail event of err, when it is a
// guardrail's trip that stopped step s (not a person's rejection of one
// that asked, journaled when it asked).
func (r *run) recordGuardStop(s *flow.Step, attempt int, err error) {
	var ge *agent.GuardrailError
	if !errors.As(err, &ge) || ge.Rejected {
		return
	}
	r.recordGuardTrip(s, attempt, ge.Turn, ge.Name, ge.Side, ge.Reason, journal.GuardrailStopped)
}

// guardKind is the kind of step s's guardrail name (regex, deny, schema,
// check or judge); "" for one of a sub-agent's, which s does not hold.
func guardKind(s *flow.Step, name string) string {
	gs := s.Guardrails
	if s.Agent != nil {
		gs = s.Agent.Guardrails
	}
	for _, g := range gs {
		if g.Name == name {
			return g.Kind()
		}
	}
	return ""
}

// takeGuards returns, once, what a resume found decided about llm step
// i's guardrail trips (nil when nothing); steps run on several
// goroutines, so it holds recordMu.
func (r *run) takeGuards(i int) *guardResume {
	r.recordMu.Lock()
	defer r.recordMu.Unlock()
	gr := r.d.guards[i]
	delete(r.d.guards, i)
	return gr
}
