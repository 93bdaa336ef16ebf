package plan

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/reinhq/rein/safety"
)

// MetaTool is the name of the agent meta-tool that runs a plan. A plan may
// never call it (nor any other tool a Catalog lists as running plans):
// plans do not nest.
const MetaTool = "execute_plan"

// Limits of the plan format itself, enforced by Parse.
const (
	// MaxBytes is the largest plan document Parse reads (1 MiB).
	MaxBytes = 1 << 20
	// MaxDepth is the deepest nesting of objects and lists Parse accepts,
	// the plan object itself counting as one level.
	MaxDepth = 32
)

// Plan is a candidate plan: a goal and the steps meant to reach it. It is
// data proposed by a planner (usually a model) and means nothing until
// Validate accepts it against a Catalog.
type Plan struct {
	Goal  string `json:"goal"`
	Steps []Step `json:"steps"`
}

// Step is one tool call of a plan. Args is a JSON object whose values may
// hold references {"$ref": "step_id.path"} to the output of an earlier (or
// already completed) step; a reference implies a dependency. Declaration
// is what the planner states before a step with side effects runs: the
// facts it relies on, checked against the run before the call (the
// policy's undeclared-side-effect rule).
type Step struct {
	ID          string              `json:"id"`
	Tool        string              `json:"tool"`
	DependsOn   []string            `json:"depends_on,omitempty"`
	Args        map[string]any      `json:"args,omitempty"`
	Declaration *safety.Declaration `json:"declaration,omitempty"`
}

// StepResult is the output of a step that completed.
type StepResult struct {
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Output any    `json:"output"`
}

// JSON returns the plan as compact JSON (map keys sorted).
func (p *Plan) JSON() []byte {
	b, err := json.Marshal(p)
	if err != nil { // only non-JSON values in Args, which Parse never yields
		return []byte(`{"error":` + strconv.Quote(err.Error()) + `}`)
	}
	return b
}

// Problem is one thing wrong with a plan: where (an RFC 6901 JSON pointer
// into the plan document, "" for the whole plan) and what. It is the
// problem type of the safety package's declarations, whose problems a plan
// step's declaration reports under its own pointer.
type Problem = safety.Problem

func joinProblems(ps []Problem) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// pointerToken escapes one JSON pointer reference token (RFC 6901).
func pointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
