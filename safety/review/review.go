// Package review is the reviewer of risk tiers 3 and 4 (safety.Controls):
// a separate model call, through model.Decide, that judges the claims
// behind a pending tool call against the evidence.
//
// Its context is isolated by construction: the request it sends holds
// only what a safety.ReviewRequest holds — the user's input, the recorded
// tool results, the declaration and the pending action (tool, args) — and
// is built here from nothing else. The reasoning, prompts and transcript
// of the planner or agent that chose the call never reach it.
package review

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
)

// MaxResultBytes bounds each tool result the reviewer is shown (its JSON
// is cut there, marked as cut).
const MaxResultBytes = 4096

// Model is a safety.Reviewer asking a model.
type Model struct {
	Model model.Model
	// Name is the model's name in requests (rein.yaml models:).
	Name string
}

var _ safety.Reviewer = (*Model)(nil)

// Decision is the model.Request.Decision of a reviewer's request.
const Decision = "review"

const instruction = "You are a reviewer. Judge each claim behind a pending tool call using only the evidence given: " +
	"the user's input, the recorded tool results and the declaration. A claim is supported only when that evidence states it; " +
	"an assumption nothing confirms is not supported. Give one verdict per claim, in order, copying the claim's text exactly, " +
	"with the evidence that decided (a quote, or what is missing). Reply with one JSON value only, no prose"

type answer struct {
	Verdicts []safety.ClaimVerdict `json:"verdicts"`
}

// Review asks the model for one verdict per claim of req. The answer is
// checked (every claim judged once, no other claim), corrected once, and
// otherwise a format error.
func (m *Model) Review(ctx context.Context, req *safety.ReviewRequest) ([]safety.ClaimVerdict, error) {
	content, err := Prompt(req)
	if err != nil {
		return nil, err
	}
	mreq := &model.Request{Model: m.Name, RunID: req.RunID, StepID: req.StepID, Attempt: req.Attempt, Decision: Decision,
		Messages: []model.Message{{Role: model.User, Content: content}}}
	d, err := model.Decide(ctx, m.Model, mreq, model.DecideOptions[answer]{Instruction: instruction,
		Check: func(a answer) error { return checkVerdicts(req.Claims, a.Verdicts) }})
	if err != nil {
		return nil, fmt.Errorf("reviewer %s: %w", m.Name, err)
	}
	return d.Value.Verdicts, nil
}

// Prompt is the user message of a review: req's evidence, action and
// claims as JSON, and nothing else.
func Prompt(req *safety.ReviewRequest) (string, error) {
	results := make([]map[string]any, len(req.Results))
	for i, r := range req.Results {
		out, err := json.Marshal(r.Output)
		if err != nil {
			return "", fmt.Errorf("reviewer: tool result %d of %s: %w", i+1, r.Tool, err)
		}
		text := string(out)
		if len(text) > MaxResultBytes {
			text = text[:MaxResultBytes] + "…(cut)"
		}
		results[i] = map[string]any{"tool": r.Tool, "output": text}
	}
	body := map[string]any{
		"user_input":     req.Input,
		"tool_results":   results,
		"pending_action": req.Action,
		"claims":         req.Claims,
	}
	if req.Declaration != nil {
		body["declaration"] = req.Declaration
	}
	b, err := json.MarshalIndent(body, "", "  ")
	if err != nil {
		return "", fmt.Errorf("reviewer: %w", err)
	}
	return "Judge these claims against this evidence:\n" + string(b), nil
}

// checkVerdicts requires one verdict per claim, by its text.
func checkVerdicts(claims []string, vs []safety.ClaimVerdict) error {
	want := map[string]bool{}
	for _, c := range claims {
		want[c] = true
	}
	var probs []string
	seen := map[string]bool{}
	for i, v := range vs {
		switch {
		case !want[v.Claim]:
			probs = append(probs, fmt.Sprintf("/verdicts/%d/claim: %q is not one of the claims; copy each claim's text exactly", i, v.Claim))
		case seen[v.Claim]:
			probs = append(probs, fmt.Sprintf("/verdicts/%d/claim: %q is judged twice", i, v.Claim))
		}
		seen[v.Claim] = true
	}
	for _, c := range claims {
		if !seen[c] {
			probs = append(probs, fmt.Sprintf("/verdicts: claim %q has no verdict", c))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s", strings.Join(probs, "; "))
	}
	return nil
}
