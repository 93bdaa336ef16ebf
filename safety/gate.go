// Package safety holds the policy gate that sits in front of every tool
// invocation — in flows, plans, agents and compensations alike. This package
// defines the port and the allow-everything default; the provenance-aware
// policies, risk tiers and the reviewer build on it.
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
}

// Decision is the gate's answer, always with a reason when it is not Allow.
type Decision struct {
	Verdict Verdict
	Reason  string
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
