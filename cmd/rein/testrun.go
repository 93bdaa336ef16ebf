package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// What a case's result says (caseResult.Result).
const (
	resultOK         = "ok"         // the case behaved as expected
	resultUnexpected = "unexpected" // it did not
	resultSkipped    = "skipped"    // it was not run, or never reached its step
)

// caseResult is one case's line of the report (and its -o json object).
type caseResult struct {
	Name string `json:"name"`
	// Expect is "accepted" (a valid value) or "rejected" (an invalid one,
	// with an error that says where).
	Expect string `json:"expect"`
	// Actual is what happened: the run's status, "rejected" (the input or
	// the args were refused before anything ran), or "not run".
	Actual string `json:"actual"`
	Result string `json:"result"`
	// Why says why the result is unexpected or skipped.
	Why string `json:"why,omitempty"`
	// RunID is the case's run, in the throwaway store (not printed).
	RunID string `json:"-"`
	// Error is the refusal's or the failure's message.
	Error string `json:"error,omitempty"`
	// Approved are the steps whose approval rein test gave so that an
	// output case reaches its step.
	Approved []string `json:"approved,omitempty"`
	// Policies are the gate's rules that held on the case's calls.
	Policies []firedPolicy `json:"policies"`
}

// firedPolicy is one rule of the gate that held on a call.
type firedPolicy struct {
	Step    string `json:"step"`
	Tool    string `json:"tool"`
	Rule    string `json:"rule"`
	Verdict string `json:"verdict"`
	// LogOnly: an enforce: false rule, recorded and not applied.
	LogOnly bool `json:"log_only,omitempty"`
}

func (f firedPolicy) String() string {
	s := f.Rule + "=" + f.Verdict
	if f.LogOnly {
		s += " (log only)"
	}
	return s
}

func expectation(valid bool) string {
	if valid {
		return "accepted"
	}
	return "rejected"
}

// tester runs cases against one project with one Client and store.
type tester struct {
	p       *project.Project
	client  *rein.Client
	reader  *runs.Reader
	answers *answers
	suite   *suite
}

// run runs one case and judges it.
func (t *tester) run(ctx context.Context, c *testCase) caseResult {
	r := caseResult{Name: c.Name, Expect: expectation(c.Valid), Policies: []firedPolicy{}}
	if c.Skip != "" {
		r.Actual, r.Result, r.Why = "not run", resultSkipped, c.Skip
		return r
	}
	if c.kind == kindArgs {
		return t.args(ctx, c, r)
	}
	input := t.suite.input
	if c.kind == kindInput {
		input = c.Value
	}
	if err := t.answers.set(c); err != nil {
		r.Actual, r.Result, r.Why = "error", resultUnexpected, err.Error()
		return r
	}
	defer func() { _ = t.answers.set(nil) }()
	res, err := t.client.Start(ctx, t.p, input, nil)
	if err != nil {
		var ie *rein.InputError
		if !errors.As(err, &ie) {
			r.Actual, r.Result, r.Error = "error", resultUnexpected, err.Error()
			r.Why = "the run could not start"
			return r
		}
		r.Actual, r.Error = "rejected", err.Error()
		switch {
		case c.kind != kindInput:
			r.Result, r.Why = resultSkipped, "the run input the step cases use was refused: give the folder an input.json its inputs: schema accepts, or --input FILE"
		case c.Valid:
			r.Result, r.Why = resultUnexpected, "the input was refused"
		case !located(r.Error):
			r.Result, r.Why = resultUnexpected, "the refusal does not say where the input is wrong"
		default:
			r.Result = resultOK
		}
		return r
	}
	if c.kind == kindOutput {
		if res, err = t.approveUntil(ctx, res, c.step.ID, &r); err != nil {
			r.Actual, r.Result, r.Why = "error", resultUnexpected, err.Error()
			return r
		}
	}
	r.RunID, r.Actual = res.RunID, string(res.Status)
	if res.Error != nil && res.Error.Class == fault.Policy {
		r.Actual = "blocked" // failed, by the gate
	}
	if res.Error != nil {
		r.Error = res.Error.Error()
	}
	if r.Policies, err = t.fired(ctx, res.RunID); err != nil {
		r.Result, r.Why = resultUnexpected, err.Error()
		return r
	}
	if c.kind == kindInput {
		t.judgeRun(c, res, &r)
		return r
	}
	t.judgeStep(c, res, &r)
	return r
}

// maxApprovals bounds the approvals an output case gives to reach its
// step.
const maxApprovals = 8

// approveUntil approves, as a person would, what the run waits for until
// step has run (or the run stops another way): an output case is about
// its step, and the approvals on the way are the gate's, already
// journaled. It notes each approval in r.
func (t *tester) approveUntil(ctx context.Context, res *rein.Result, step string, r *caseResult) (*rein.Result, error) {
	for range maxApprovals {
		if st, ok := res.Steps[step]; ok && st.Status.Settled() || res.Status != trace.RunWaiting || len(res.Pending) == 0 {
			return res, nil
		}
		a := res.Pending[0]
		out, err := t.client.Decide(ctx, res.RunID, a.StepID, rein.Decision{Status: store.ApprovalApproved, By: "rein test",
			Comment: "approved by rein test so the case reaches step " + step}, &rein.DecideOptions{Resume: true, ResumeOptions: rein.ResumeOptions{Project: t.p}})
		if err != nil {
			return nil, fmt.Errorf("approving step %s of run %s: %w", a.StepID, res.RunID, err)
		}
		r.Approved = append(r.Approved, a.StepID)
		res = out.Result
	}
	return res, nil
}

// judgeRun: an input the schema accepts should run, to success or to a
// stop the gate decided (an approval to wait for, a block); one it
// refuses should never start.
func (t *tester) judgeRun(c *testCase, res *rein.Result, r *caseResult) {
	if !c.Valid {
		r.Result, r.Why = resultUnexpected, "the input was accepted and the run started"
		return
	}
	if runAccepted(res) {
		r.Result = resultOK
		return
	}
	r.Result, r.Why = resultUnexpected, "the run "+string(res.Status)
}

// runAccepted: the run succeeded, or it stopped where the gate said so.
func runAccepted(res *rein.Result) bool {
	switch res.Status {
	case trace.RunSucceeded, trace.RunWaiting:
		return true
	}
	return res.Error != nil && res.Error.Class == fault.Policy
}

// judgeStep: a step given an output its schema accepts should succeed
// (and the run go on as judgeRun says); one its schema refuses should
// fail the step with an error that says where.
func (t *tester) judgeStep(c *testCase, res *rein.Result, r *caseResult) {
	st, ran := res.Steps[c.step.ID]
	if !ran || st.Status == trace.StepPending || st.Status == trace.StepSkipped || st.Status == trace.StepWaiting && st.Error == nil {
		r.Result, r.Why = resultSkipped, fmt.Sprintf("the run (%s) never ran step %s's tool or model", res.Status, c.step.ID)
		return
	}
	msg := ""
	if st.Error != nil {
		msg = st.Error.Error()
		r.Error = msg
	}
	switch {
	case c.Valid && st.Status != trace.StepSucceeded:
		r.Result, r.Why = resultUnexpected, fmt.Sprintf("step %s is %s", c.step.ID, st.Status)
	case c.Valid && !runAccepted(res):
		r.Result, r.Why = resultUnexpected, "the run "+string(res.Status)
	case c.Valid:
		r.Result = resultOK
	case st.Status == trace.StepSucceeded:
		r.Result, r.Why = resultUnexpected, fmt.Sprintf("step %s accepted an output its schema refuses", c.step.ID)
	case !located(msg):
		r.Result, r.Why = resultUnexpected, fmt.Sprintf("step %s is %s, and its error does not say where the output is wrong", c.step.ID, st.Status)
	default:
		r.Result = resultOK
	}
}

// args checks an args case as a call is checked before its tool runs:
// the tool's input_schema, then the gate (rein.yaml's policy: joined with
// the flow's), with no provenance (no run made the args).
func (t *tester) args(ctx context.Context, c *testCase, r caseResult) caseResult {
	if err := c.check(c.Value); err != nil {
		r.Actual, r.Error = "rejected", fmt.Sprintf("step %s: args %v", c.step.ID, err)
		r.Result = resultOK
		if c.Valid {
			r.Result, r.Why = resultUnexpected, "the args were refused"
		}
		return r
	}
	if !c.Valid {
		r.Actual, r.Result, r.Why = "accepted", resultUnexpected, "the tool's input_schema accepted the args"
		return r
	}
	d, err := t.p.CallGate(nil).Check(ctx, &safety.Invocation{StepID: c.step.ID, Attempt: 1, Tool: c.spec, Args: c.Value})
	if err != nil {
		r.Actual, r.Result, r.Why = "error", resultUnexpected, err.Error()
		return r
	}
	r.Actual, r.Result = string(d.Verdict), resultOK
	if d.Rule != "" {
		r.Policies = append(r.Policies, firedPolicy{Step: c.step.ID, Tool: c.spec.Name, Rule: d.Rule, Verdict: string(d.Verdict)})
	}
	for _, l := range d.LogOnly {
		r.Policies = append(r.Policies, firedPolicy{Step: c.step.ID, Tool: c.spec.Name, Rule: l.Rule, Verdict: string(l.Verdict), LogOnly: true})
	}
	return r
}

// fired reads the rules of the gate that held on the run's calls from its
// journal.
func (t *tester) fired(ctx context.Context, runID string) ([]firedPolicy, error) {
	v, err := t.reader.Show(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", runID, err)
	}
	out := []firedPolicy{}
	for _, g := range v.Gate {
		if rule, ok := ruleOf(g.Why); ok {
			out = append(out, firedPolicy{Step: g.StepID, Tool: g.Tool, Rule: rule, Verdict: g.Verdict})
		}
		for _, l := range g.LogOnly {
			if rule, ok := ruleOf(l.Why); ok {
				out = append(out, firedPolicy{Step: g.StepID, Tool: g.Tool, Rule: rule, Verdict: l.Verdict, LogOnly: true})
			}
		}
	}
	return out, nil
}

// ruleOf reads the rule's name out of a journaled reason, "rule <name>:
// <reason>" (safety.Decision.Why).
func ruleOf(why string) (string, bool) {
	rest, ok := strings.CutPrefix(why, "rule ")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, ":")
	return name, ok && name != ""
}

// located reports whether an error says where a value is wrong: a schema
// error's "at /pointer" or "at (root)".
func located(msg string) bool {
	return strings.Contains(msg, "at /") || strings.Contains(msg, "at (root)")
}
