package runs

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/trace"
)

// GuardrailWhy is one guardrail trip of a run, from its journal (a
// guardrail event): which guardrail of which step, its kind, its side,
// why it tripped in its words (never the text it tripped on; bounded and
// redacted) and what it did: stop (the step failed with a guardrail
// error) or ask (the step waited for a person, Decided says how it was
// decided when it was).
type GuardrailWhy struct {
	StepID  string `json:"step_id"`
	Attempt int    `json:"attempt,omitempty"`
	// Turn is the agent turn whose answer tripped it (0: the task, an
	// input guardrail, or an llm step's).
	Turn   int    `json:"turn,omitempty"`
	Name   string `json:"name"`
	Kind   string `json:"kind,omitempty"`
	Side   string `json:"side"`
	Reason string `json:"reason"`
	OnTrip string `json:"on_trip"`
}

// guardrailTrips lists the guardrail trips of events, of step (every
// step when "").
func guardrailTrips(events []*trace.Event, step string) []GuardrailWhy {
	var out []GuardrailWhy
	for _, e := range events {
		if e.Kind != trace.GuardrailTripped || step != "" && e.StepID != step {
			continue
		}
		g, err := journal.DecodeGuardrailTrip(e.Data)
		if err != nil {
			continue
		}
		out = append(out, GuardrailWhy{StepID: e.StepID, Attempt: e.Attempt, Turn: e.Turn, Name: g.Name, Kind: g.Kind,
			Side: g.Side, Reason: g.Reason, OnTrip: e.Decision})
	}
	return out
}

// RunWhyView explains a run as a whole (rein runs why RUN): the
// guardrails that tripped, the log-only policy rules that held on its
// calls (enforce: false: what they would have decided, not applied), and
// its failed attempts.
type RunWhyView struct {
	RunID      string         `json:"run_id"`
	Status     string         `json:"status"`
	Guardrails []GuardrailWhy `json:"guardrails"`
	// LogOnly counts the log-only rules that held, each time one did.
	LogOnly  int            `json:"log_only"`
	Logged   []GateDecision `json:"logged,omitempty"`
	Failures []Failure      `json:"failures,omitempty"`
	// Premises are the failed premises that paused the run, at any step.
	Premises []PremiseFailure `json:"premises,omitempty"`
	// Invalidated are the run's calls that touched a resource a
	// remediation marked invalid.
	Invalidated []InvalidatedCall `json:"invalidated,omitempty"`
}

// WhyRun explains run ref as a whole (rein runs why RUN).
func (r *Reader) WhyRun(ctx context.Context, ref string) (*RunWhyView, error) {
	run, err := r.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	events, err := r.st.Events(ctx, run.ID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("journal of run %s: %w", run.ID, err)
	}
	v := &RunWhyView{RunID: run.ID, Status: string(run.Status), Guardrails: guardrailTrips(events, ""), Failures: failures(events, ""),
		Premises: premiseFailures(events, "")}
	calls, err := r.st.Calls(ctx, run.ID, "")
	if err != nil {
		return nil, fmt.Errorf("call records of run %s: %w", run.ID, err)
	}
	v.Invalidated = InvalidatedCalls(calls)
	if v.Guardrails == nil {
		v.Guardrails = []GuardrailWhy{}
	}
	for _, d := range gateDecisions(events) {
		if len(d.LogOnly) > 0 {
			v.LogOnly += len(d.LogOnly)
			v.Logged = append(v.Logged, d)
		}
	}
	return v, nil
}
