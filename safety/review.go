package safety

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/tool"
)

// Reviewer checks the claims behind a pending call against the evidence,
// in a context of its own: a separate model call (package safety/review)
// that sees the ReviewRequest and nothing else.
type Reviewer interface {
	// Review returns one verdict per claim of req. An error means no
	// review: the call then waits for a person.
	Review(ctx context.Context, req *ReviewRequest) ([]ClaimVerdict, error)
}

// ReviewRequest is everything the reviewer sees: the user's input, the
// tool results recorded so far, the declaration and the pending action —
// never the reasoning or the transcript of the planner or agent that chose
// the call.
type ReviewRequest struct {
	RunID, StepID string
	Attempt       int
	// Input is the user's input to the run (Evidence.ForReview).
	Input any
	// Results are the recorded tool results, oldest first.
	Results []ToolResult
	// Declaration is what the model that chose the call declared; nil
	// when none did.
	Declaration *Declaration
	// Action is the pending call.
	Action Action
	// Claims are what to judge: the declaration's facts and assumptions,
	// or without them the claim that the action is warranted.
	Claims []string
}

// ToolResult is one recorded tool output.
type ToolResult struct {
	Tool   string `json:"tool"`
	Output any    `json:"output"`
}

// Action is a pending tool call.
type Action struct {
	Tool   string      `json:"tool"`
	Effect tool.Effect `json:"effect,omitempty"`
	Args   any         `json:"args"`
}

// request builds the reviewer's request for inv from the run's evidence.
func (r *RunRisk) request(inv *Invocation) *ReviewRequest {
	input, results := r.cfg.Evidence.ForReview()
	req := &ReviewRequest{RunID: inv.RunID, StepID: inv.StepID, Attempt: inv.Attempt, Input: input, Results: results, Declaration: inv.Declaration,
		Action: Action{Tool: inv.Tool.Name, Effect: inv.Tool.Effect, Args: inv.Args}}
	if d := inv.Declaration; d != nil {
		for _, f := range d.Facts {
			req.Claims = append(req.Claims, f.Claim)
		}
		for _, a := range d.Assumptions {
			req.Claims = append(req.Claims, a.Claim)
		}
	}
	if len(req.Claims) == 0 {
		req.Claims = []string{fmt.Sprintf("calling tool %s with these args is what the user's input asks for, and the args are supported by the input and the tool results", inv.Tool.Name)}
	}
	return req
}
