// Package safety holds the policy gate that sits in front of every tool
// invocation — in flows, plans, agents and compensations alike. This package
// defines the port, the allow-everything default, provenance (where each
// argument came from), Policy (a gate over rules that are data), risk
// tiers (Assess, a run's RunRisk) and Controls, the gate that adds the
// tier's controls — the reviewer (Reviewer, package safety/review), a
// person's approval, the post-check — to a policy's decision.
package safety

import (
	"context"

	"github.com/reinhq/rein/tool"
)

// Verdict is what the gate decided.
type Verdict string

// Verdicts.
const (
	Allow           Verdict = "allow"
	Block           Verdict = "block"
	RequireApproval Verdict = "require_approval"
	RequireReview   Verdict = "require_review"
)

// Invocation is a tool call the runtime is about to make.
type Invocation struct {
	RunID   string
	StepID  string
	Attempt int
	Tool    tool.Spec
	Args    any
	// Provenance says where each argument came from (nil: unknown, which
	// no provenance rule matches).
	Provenance Provenance
	// Approved is set when a person approved this exact call (the args a
	// parked step recorded); require_approval rules then hold no more.
	Approved bool
	// Tier is the run's risk tier, 1–4; 0 when not assessed.
	Tier int
	// Verified lists the inferred arguments a tool result of this run
	// confirms (Evidence.Verify), sorted by pointer.
	Verified []Verification
	// Chosen says a model chose this call (a plan step, an agent call, an
	// execute_plan step): it is expected to carry a Declaration.
	Chosen bool
	// Declaration is what the model declared for the call (nil: none);
	// Claims are its facts checked against the run (CheckDeclaration).
	Declaration *Declaration
	Claims      []ClaimVerdict
}

// Decision is the gate's answer, always with a reason when it is not Allow.
type Decision struct {
	Verdict Verdict
	// Rule names the rule that decided ("" for a gate without rules).
	Rule   string
	Reason string
	// LogOnly are the decisions of log-only rules (enforce: false) that
	// held: journaled and counted, never applied.
	LogOnly []Decision
}

// Why is the decision's reason as journals and messages give it: "rule
// <name>: <reason>", or the reason alone when no rule decided.
func (d Decision) Why() string {
	if d.Rule == "" {
		return d.Reason
	}
	return "rule " + d.Rule + ": " + d.Reason
}

// Gate decides on every tool invocation before it happens. Check must be
// deterministic for the same invocation and safe for concurrent use. An
// error from Check fails the step with a policy error.
type Gate interface {
	Check(ctx context.Context, inv *Invocation) (Decision, error)
}

// AllowAll is the default gate: every invocation is allowed.
var AllowAll Gate = allowAll{}

type allowAll struct{}

func (allowAll) Check(context.Context, *Invocation) (Decision, error) {
	return Decision{Verdict: Allow}, nil
}
