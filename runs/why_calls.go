package runs

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/trace"
)

// explained reports whether rein runs why explains step s: a step that
// calls tools, or an llm step with guardrails (its trips).
func explained(s *flow.Step) bool {
	return s.Type == flow.Tool || s.Type == flow.Plan || s.Type == flow.Agent || s.Type == flow.LLM && len(s.Guardrails) > 0
}

// modelCallsWhy explains the calls a model chose in plan or agent step s:
// an agent's calls from its journaled transcript (the last attempt), plan
// steps from the gate's journaled decisions (gated runs only).
func modelCallsWhy(runID string, s *flow.Step, events []*trace.Event) (*WhyView, error) {
	v := &WhyView{RunID: runID, StepID: s.ID, Calls: []CallWhy{}}
	if s.Type == flow.Agent {
		turns, err := engine.FoldAgentTranscript(events, s.ID, 0)
		if err != nil {
			return nil, fmt.Errorf("transcript of step %s: %w", s.ID, err)
		}
		for _, t := range turns {
			for _, c := range t.Calls {
				if c.Provenance == nil && c.Declaration == nil {
					continue // not traced: invalid, or execute_plan (its steps follow)
				}
				v.Calls = append(v.Calls, CallWhy{Ref: fmt.Sprintf("turn%d/call%d", t.N, c.Index), Tool: c.Tool, Status: string(c.Status),
					Args: tracedOrigins(c.Provenance), Verified: c.Verified, Declaration: c.Declaration, Claims: c.Claims})
			}
		}
	}
	for _, ev := range events {
		if ev.StepID == s.ID && ev.ErrorClass == string(fault.Guardrail) && ev.Error != "" {
			v.Guardrail = ev.Error // the latest trip
		}
	}
	for _, g := range journal.GateDecisions(events) {
		if g.StepID != s.ID || g.PlanStep == "" || len(g.Decision.Basis) == 0 {
			continue
		}
		var b safety.Basis
		if json.Unmarshal(g.Decision.Basis, &b) != nil {
			continue
		}
		ref := "plan " + strconv.Itoa(g.Attempt) + " step " + g.PlanStep
		if g.Turn > 0 {
			ref = "turn" + strconv.Itoa(g.Turn) + "/plan step " + g.PlanStep
		}
		v.Calls = append(v.Calls, CallWhy{Ref: ref, Tool: g.Tool, Status: g.Decision.Verdict, Args: tracedOrigins(b.Provenance),
			Verified: b.Verified, Declaration: b.Declaration, Claims: b.Claims})
	}
	return v, nil
}

// tracedOrigins lists a traced provenance by pointer, saying what each
// origin means.
func tracedOrigins(prov safety.Provenance) []ArgOrigin {
	out := make([]ArgOrigin, 0, len(prov))
	for _, ptr := range prov.Pointers() {
		a := ArgOrigin{Pointer: ptr, Origins: prov[ptr]}
		for _, o := range prov[ptr] {
			switch {
			case o == safety.OriginUser:
				a.From = append(a.From, "the user's input")
			case o == safety.OriginUserMentioned:
				a.From = append(a.From, "only inside the user's text")
			case o == safety.OriginInferred:
				// not "found in no input or tool output": a value only inside
				// a tool's text is inferred too (it verifies nothing)
				a.From = append(a.From, "written by the model")
			case o.IsTool():
				a.From = append(a.From, "a tool output of the run")
			}
		}
		out = append(out, a)
	}
	return out
}
