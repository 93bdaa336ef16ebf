package runs

import (
	"context"
	"fmt"
	"slices"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/summary"
)

// Row is a run's row as the run operations return it: the store's row,
// with its retention as a duration string ("720h0m0s", the form a flow's
// retention: accepts) in JSON instead of nanoseconds.
type Row struct {
	*store.Run
	Retention string `json:"retention,omitempty"`
}

// NewRow returns the row of run.
func NewRow(run *store.Run) *Row {
	row := &Row{Run: run}
	if run.Retention > 0 {
		row.Retention = run.Retention.String()
	}
	return row
}

// View is everything about one run: its row, every step (status,
// attempts, input, output, error, what its model calls cost) and its
// approvals, pending and decided. Its JSON is what surfaces print.
type View struct {
	Run   *Row       `json:"run"`
	Steps []StepView `json:"steps"`
	// Approvals are the run's approvals, oldest first: those still pending
	// and the decisions (status, by, at, comment).
	Approvals []*store.Approval `json:"approvals"`
	// Calls are the run's call records (the calls of its for_each items and
	// plan steps), in the order they were first committed.
	Calls []*store.Call `json:"calls"`
	// Gate are the policy gate's decisions, in journal order (none
	// without a gate).
	Gate []GateDecision `json:"gate"`
	// Risk is the run's risk tier, every change of it and the reviewer's
	// reviews, from the journal; nil for a run without risk tiers.
	Risk *RiskView `json:"risk,omitempty"`
	// NeedsTools are the Go tools the run was started with that this Runs
	// was not given: it cannot resume the run (see HintNeedsTools).
	NeedsTools []string `json:"needs_tools,omitempty"`
	// Agents are the transcripts of the run's agent steps, by step id:
	// turns, each call with its arguments, status and observation, and an
	// execute_plan call with its sub-run (plan_run: status, budget, steps).
	Agents map[string][]agent.Turn `json:"agents,omitempty"`
	// Failures are the run's failed attempts, in journal order, each with
	// its error's cause chain.
	Failures []Failure `json:"failures,omitempty"`
	// Guardrails are the guardrail trips of the run's agent and llm
	// steps, in journal order.
	Guardrails []GuardrailWhy `json:"guardrails,omitempty"`
}

// StepView is a step's row and its usage.
type StepView struct {
	*store.Step
	StepUsage
}

// StepUsage is what a step's model calls cost, folded from the journal.
type StepUsage struct {
	LLMCalls    int `json:"llm_calls"`
	TokensIn    int `json:"tokens_in"`
	TokensOut   int `json:"tokens_out"`
	Corrections int `json:"corrections"`
}

// Pending returns the approvals of v that wait for a decision.
func (v *View) Pending() []*store.Approval {
	var out []*store.Approval
	for _, a := range v.Approvals {
		if a.Status == store.ApprovalPending {
			out = append(out, a)
		}
	}
	return out
}

// Show returns the view of the run ref names. Errors as Get.
func (r *Reader) Show(ctx context.Context, ref string) (*View, error) {
	run, err := r.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	id := run.ID
	steps, err := r.st.Steps(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("steps of run %s: %w", id, err)
	}
	approvals, err := r.st.Approvals(ctx, &store.ListApprovalsParams{RunID: id})
	if err != nil {
		return nil, fmt.Errorf("approvals of run %s: %w", id, err)
	}
	calls, err := r.st.Calls(ctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("call records of run %s: %w", id, err)
	}
	if calls == nil {
		calls = []*store.Call{}
	}
	events, err := r.st.Events(ctx, id, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("journal of run %s: %w", id, err)
	}
	use := stepUses(events)
	v := &View{Run: NewRow(run), Steps: make([]StepView, len(steps)), Approvals: approvals, Calls: calls}
	if v.Approvals == nil {
		v.Approvals = []*store.Approval{}
	}
	for i, st := range steps {
		v.Steps[i] = StepView{Step: st, StepUsage: use[st.StepID]}
		if st.Type != "agent" {
			continue
		}
		turns, err := engine.FoldAgentTranscript(events, st.StepID, 0)
		if err != nil {
			return nil, fmt.Errorf("transcript of step %s: %w", st.StepID, err)
		}
		if v.Agents == nil {
			v.Agents = map[string][]agent.Turn{}
		}
		v.Agents[st.StepID] = turns
	}
	v.Gate = gateDecisions(events)
	v.Risk = riskView(events)
	v.Failures = failures(events, "")
	v.Guardrails = guardrailTrips(events, "")
	if !run.Finished() {
		v.NeedsTools, err = r.NeedsTools(run)
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

// NeedsTools returns the Go tools (and workflow tools) run was started
// with that r's load options lack: without them it cannot resume here.
func (r *Reader) NeedsTools(run *store.Run) ([]string, error) {
	m, err := project.MetaOf(run)
	if err != nil {
		return nil, err
	}
	missing := m.MissingTools(r.load.Tools)
	if r.load.Workflow == nil {
		for _, w := range m.Workflows {
			missing = append(missing, w.Tool)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

// stepUses folds a run's journal into each step's usage.
func stepUses(events []*trace.Event) map[string]StepUsage {
	evs := make([]trace.Event, len(events))
	for i, e := range events {
		evs[i] = *e
	}
	out := map[string]StepUsage{}
	for _, r := range summary.Summarize(evs).Runs {
		for _, s := range r.Steps {
			out[s.StepID] = StepUsage{LLMCalls: s.ModelCalls, TokensIn: s.TokensIn, TokensOut: s.TokensOut, Corrections: s.Corrections}
		}
	}
	return out
}

// GateDecision is one decision of the policy gate, from the journal.
type GateDecision struct {
	StepID   string `json:"step_id"`
	PlanStep string `json:"plan_step,omitempty"`
	Attempt  int    `json:"attempt"`
	Tool     string `json:"tool"`
	Verdict  string `json:"verdict"`
	// Why is "rule <name>: <reason>" (or the gate's reason).
	Why string `json:"why,omitempty"`
	// LogOnly are the log-only rules (enforce: false) that held on the
	// call: what they would have decided, not applied.
	LogOnly []journal.LoggedRule `json:"log_only,omitempty"`
}

func gateDecisions(events []*trace.Event) []GateDecision {
	out := []GateDecision{}
	for _, g := range journal.GateDecisions(events) {
		out = append(out, GateDecision{StepID: g.StepID, PlanStep: g.PlanStep, Attempt: g.Attempt, Tool: g.Tool, Verdict: g.Decision.Verdict, Why: g.Decision.Why, LogOnly: g.Decision.LogOnly})
	}
	return out
}

// RiskView is a run's risk tier as its journal tells it.
type RiskView struct {
	// Tier is the run's current tier, 1–4: the last change's.
	Tier int `json:"tier"`
	// Changes are the assessments that set or raised it, in order.
	Changes []TierChange `json:"changes"`
	// Reviews are the reviewer's reviews, in order.
	Reviews []Review `json:"reviews,omitempty"`
}

// TierChange is one change of a run's risk tier.
type TierChange struct {
	journal.TierChange
	// StepID and Tool name what raised it (empty at intake).
	StepID string `json:"step_id,omitempty"`
	Tool   string `json:"tool,omitempty"`
}

// Review is one review of a pending call.
type Review struct {
	journal.Review
	StepID  string `json:"step_id"`
	Attempt int    `json:"attempt,omitempty"`
	Tool    string `json:"tool"`
}

// riskView folds the risk_tier and review events; nil when there are
// none. A record that does not decode is shown with what the event holds.
func riskView(events []*trace.Event) *RiskView {
	var v *RiskView
	for _, e := range events {
		switch e.Kind {
		case trace.RiskTier:
			if v == nil {
				v = &RiskView{}
			}
			c, err := journal.DecodeTierChange(e.Data)
			if err != nil {
				c = &journal.TierChange{Stage: "unreadable: " + err.Error()}
			}
			v.Changes = append(v.Changes, TierChange{TierChange: *c, StepID: e.StepID, Tool: e.Tool})
			v.Tier = max(v.Tier, c.Tier)
		case trace.ReviewDone:
			if v == nil {
				v = &RiskView{}
			}
			r, err := journal.DecodeReview(e.Data)
			if err != nil {
				r = &journal.Review{Verdict: e.Decision, Error: "unreadable review record: " + err.Error()}
			}
			v.Reviews = append(v.Reviews, Review{Review: *r, StepID: e.StepID, Attempt: e.Attempt, Tool: e.Tool})
		}
	}
	return v
}
