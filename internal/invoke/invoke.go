package invoke

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// Validator checks a JSON value against a schema (*schema.Schema is one).
type Validator interface {
	Validate(v any) error
}

// Pipeline passes tool calls through the stages of the package
// documentation. Build it once; it is safe for concurrent use.
type Pipeline struct {
	// Gate decides on every call. Nil or safety.AllowAll means every call
	// is allowed: the gate is not consulted and no decision is recorded.
	Gate safety.Gate
	// Now is the clock of call records. Defaults to time.Now.
	Now func() time.Time
}

// Request is one call.
type Request struct {
	Tool tool.Tool
	// Spec is what the gate sees and messages name. Nil: Tool.Spec().
	Spec *tool.Spec
	// Args is the JSON value the tool is called with.
	Args any
	// Input and Output check the args and the output. Nil: any value.
	Input, Output Validator
	At            Position
	// Info, when set, is the tool.CallInfo the tool finds in its context;
	// its IdempotencyKey is filled in. Nil: RunID, StepID and Attempt come
	// from At.
	Info *tool.CallInfo
	// Recorder receives the gate's decisions and the call records. Nil:
	// none are kept, and the call is not timed.
	Recorder Recorder
	// Provenance says where each argument came from, for the gate
	// (safety.Invocation.Provenance); shared, not copied.
	Provenance safety.Provenance
	// Gate, when set, decides this call instead of the pipeline's (a
	// flow's own rules joined to the engine's gate).
	Gate safety.Gate
	// RequireApproval says the tool's declaration wants a person to
	// approve each call (approval: required). Without Approved such a
	// call, or one the gate answers require_approval, stops after the gate
	// with Outcome AwaitingApproval and an *ApprovalError; callers that
	// cannot pause for a person treat it as blocked.
	RequireApproval bool
	// Pausable says the caller can pause for a person (the agent loop, a
	// pausable plan executor): the gate's require_approval then waits for
	// approval as RequireApproval does, instead of blocking the call.
	Pausable bool
	// Approved says a person approved this call with exactly these args:
	// the approval requirement, and a gate's require_approval, are met.
	Approved bool
	// Verified, Chosen, Declaration and Claims are what the gate sees of
	// the same names in safety.Invocation: the inferred arguments a tool
	// result confirms, whether a model chose the call, its declaration and
	// the check of its facts.
	Verified    []safety.Verification
	Chosen      bool
	Declaration *safety.Declaration
	Claims      []safety.ClaimVerdict

	// invalid, when set, is what Invalid.Check found about a flagged
	// call: the gate is joined with the rule invalidated-resource.
	invalid *Checked
}

// VerifyError is the error of a model-chosen call the gate answered
// require_review because its declaration is missing or unverified
// (Outcome Blocked, classed fault.Policy): the model is to verify its
// facts and call again. Claims are the checked facts.
type VerifyError struct {
	Tool   string
	Rule   string
	Reason string
	// Missing says there was no declaration at all.
	Missing bool
	Claims  []safety.ClaimVerdict
}

func (e *VerifyError) Error() string {
	what := "its declaration is unverified"
	if e.Missing {
		what = "it carries no declaration"
	}
	return fmt.Sprintf("policy gate: require_review on tool %s by rule %s: %s; verify the facts it relies on and declare them (%s)", e.Tool, e.Rule, what, e.Reason)
}

// ApprovalError is the error of a call that waits for a person's
// approval (Outcome AwaitingApproval), classed fault.Policy. Reason says
// who asked: the tool's declaration or the gate, with its reason.
type ApprovalError struct {
	Tool   string
	Reason string
}

func (e *ApprovalError) Error() string {
	return fmt.Sprintf("tool %s needs a person's approval: %s", e.Tool, e.Reason)
}

// Call passes req through the pipeline and returns the normalised output,
// or an error classed with package fault, together with the outcome:
// InvalidArgs and InvalidOutput are business errors, Blocked a policy
// error, Panicked a business error, TimedOut and Cancelled carry the
// context's cause (a step's timeout is transient), Failed the tool's own
// error (unclassified counts as business). Errors name the tool.
func (p *Pipeline) Call(ctx context.Context, req *Request) (any, Outcome, error) {
	spec := req.Spec
	if spec == nil {
		s := req.Tool.Spec()
		spec = &s
	}
	var kb [128]byte
	rec := Record{At: req.At, Key: string(req.At.AppendKey(kb[:0])), Tool: spec.Name, Args: req.Args, Provenance: req.Provenance}
	if req.Recorder != nil {
		rec.Start = p.now() // no recorder, nothing reads the call's timing
	}
	out, err := p.call(ctx, req, spec, &rec)
	if req.Recorder != nil {
		rec.Err, rec.Duration = err, p.now().Sub(rec.Start)
		req.Recorder.Called(rec)
	}
	return out, rec.Outcome, err
}

func (p *Pipeline) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// call runs the stages, leaving the outcome in rec.
func (p *Pipeline) call(ctx context.Context, req *Request, spec *tool.Spec, rec *Record) (any, error) {
	if req.Input != nil {
		if err := req.Input.Validate(req.Args); err != nil {
			rec.Outcome = InvalidArgs
			return nil, fault.BusinessErr(fmt.Errorf("args for tool %s %w", spec.Name, err))
		}
	}
	info := req.Info
	if info == nil {
		info = &tool.CallInfo{RunID: req.At.RunID, StepID: req.At.StepID, Attempt: req.At.Attempt}
	}
	info.IdempotencyKey = rec.Key
	iv := InvalidOf(ctx)
	var rendered []string
	if iv != nil && (len(spec.Resources) > 0 || iv.tainted.Load()) {
		c, err := iv.Check(ctx, spec, req.Args, req.Provenance)
		if err != nil {
			rec.Outcome = Blocked
			return nil, err
		}
		rendered = c.Rendered
		if c.Flagged {
			flagged, found := *req, c // copies: only a flagged call allocates them
			flagged.Provenance, flagged.invalid = c.Provenance, &found
			req, rec.Provenance = &flagged, c.Provenance
			iv.Touched(rec, spec, c.Hits, false)
		}
	}
	if err := p.check(ctx, req, info, spec, rec); err != nil {
		rec.Outcome = Blocked
		var ae *ApprovalError
		if errors.As(err, &ae) {
			rec.Outcome = AwaitingApproval
		}
		return nil, err
	}
	if st, ok := req.Recorder.(Starter); ok {
		if err := st.Starting(*rec, *spec); err != nil {
			rec.Outcome = Cancelled
			var fe *fault.Error
			if !errors.As(err, &fe) {
				err = fault.New(fault.Cancelled, err)
			}
			return nil, fmt.Errorf("tool %s not called: %w", spec.Name, err)
		}
	}
	cctx := tool.WithCallInfo(ctx, info)
	var out any
	var err error
	if _, ok := ctx.Deadline(); ok {
		out, err = p.callBounded(cctx, req.Tool, req.Args, rec, req.Recorder)
	} else {
		out, rec.Outcome, err = safeCall(cctx, req.Tool, req.Args)
	}
	if err != nil {
		if rec.Outcome == Failed && ctx.Err() != nil {
			rec.Outcome = ctxOutcome(ctx)
		}
		if !strings.HasPrefix(err.Error(), "tool "+spec.Name+":") {
			err = fmt.Errorf("tool %s: %w", spec.Name, err)
		}
		return nil, err
	}
	if out, err = value.Normalize(out); err != nil {
		rec.Outcome = InvalidOutput
		return nil, fault.BusinessErr(fmt.Errorf("tool %s returned %w", spec.Name, err))
	}
	if req.Output != nil {
		if err := req.Output.Validate(out); err != nil {
			rec.Outcome = InvalidOutput
			return nil, fault.BusinessErr(fmt.Errorf("tool %s output %w", spec.Name, err))
		}
	}
	if err := tool.CheckPremise(cctx, spec.Premise, spec.Name, out, req.Args); err != nil {
		rec.Outcome, rec.Output = PremiseFailed, out
		return out, fault.BusinessErr(err)
	}
	if err := p.postCheck(cctx, req, spec, info, out); err != nil {
		rec.Outcome, rec.Output = CheckFailed, out
		return nil, err
	}
	if iv != nil && len(spec.Resources) > 0 {
		// the resources only the output renders; the call happened, so a
		// lookup that fails leaves it unflagged rather than failed.
		if _, hits, err := iv.lookup(ctx, spec, req.Args, out, rendered); err == nil {
			iv.Touched(rec, spec, hits, true)
		}
	}
	rec.Outcome, rec.Output = OK, out
	return out, nil
}

// postCheck asks a gate that checks effects after they happened
// (safety.PostChecker: a tier-4 run's post-check) about the call that just
// succeeded; its error is a policy error.
func (p *Pipeline) postCheck(ctx context.Context, req *Request, spec *tool.Spec, info *tool.CallInfo, out any) error {
	gate := p.Gate
	if req.Gate != nil {
		gate = req.Gate
	}
	pc, ok := gate.(safety.PostChecker)
	if !ok {
		return nil
	}
	inv := safety.Invocation{RunID: info.RunID, StepID: info.StepID, Attempt: info.Attempt, Tool: *spec, Args: req.Args,
		Provenance: req.Provenance, Approved: req.Approved}
	if err := pc.PostCheck(ctx, &inv, out); err != nil {
		return fault.New(fault.Policy, fmt.Errorf("tool %s had its effect, and its post-check failed: %w", spec.Name, err))
	}
	return nil
}

// check asks the gate, which sees the call as the tool will (info);
// anything but allow is a policy error. A call that needs a person's
// approval (RequireApproval, or require_approval for a Pausable caller)
// and has none is an *ApprovalError.
func (p *Pipeline) check(ctx context.Context, req *Request, info *tool.CallInfo, spec *tool.Spec, rec *Record) error {
	gate := p.Gate
	if req.Gate != nil {
		gate = req.Gate
	}
	if req.invalid != nil {
		// first, so that among equal verdicts its reason (naming the
		// resources) is the decision's.
		gate = safety.Join(InvalidGate(req.invalid), gate)
	}
	if gate == nil || gate == safety.AllowAll {
		if req.RequireApproval && !req.Approved {
			return fault.New(fault.Policy, &ApprovalError{Tool: spec.Name, Reason: "its declaration says approval: required"})
		}
		return nil
	}
	inv := safety.Invocation{RunID: info.RunID, StepID: info.StepID, Attempt: info.Attempt, Tool: *spec, Args: req.Args,
		Provenance: req.Provenance, Approved: req.Approved, Verified: req.Verified, Chosen: req.Chosen,
		Declaration: req.Declaration, Claims: req.Claims}
	d, err := gate.Check(ctx, &inv)
	if err != nil {
		return fault.New(fault.Policy, fmt.Errorf("policy gate failed on tool %s: %w", spec.Name, err))
	}
	if d.Verdict == "" {
		d.Verdict = safety.Allow
	}
	if req.Recorder != nil {
		rec.Gate = &Gated{Decision: d}
		if inv.Chosen || len(inv.Verified) > 0 {
			b := safety.BasisOf(&inv)
			rec.Gate.Basis = &b
		}
		req.Recorder.GateDecided(req.At, &inv, d)
	}
	if d.Verdict == safety.Allow || d.Verdict == safety.RequireApproval && (req.Pausable || req.Approved) {
		if req.Approved {
			return nil
		}
		if d.Verdict == safety.RequireApproval {
			return fault.New(fault.Policy, &ApprovalError{Tool: spec.Name, Reason: "policy gate " + d.Why()})
		}
		if req.RequireApproval {
			return fault.New(fault.Policy, &ApprovalError{Tool: spec.Name, Reason: "its declaration says approval: required"})
		}
		return nil
	}
	msg := fmt.Sprintf("policy gate: %s on tool %s: %s", d.Verdict, spec.Name, d.Reason)
	if d.Rule != "" {
		msg = fmt.Sprintf("policy gate: %s on tool %s by rule %s: %s", d.Verdict, spec.Name, d.Rule, d.Reason)
	}
	if d.Verdict == safety.RequireReview {
		if st := safety.StateOf(inv.Chosen, inv.Declaration, inv.Claims); st == safety.DeclarationMissing || st == safety.DeclarationUnverified {
			return fault.New(fault.Policy, &VerifyError{Tool: spec.Name, Rule: d.Rule, Reason: d.Reason, Missing: st == safety.DeclarationMissing, Claims: inv.Claims})
		}
	}
	switch d.Verdict {
	case safety.Block:
	case safety.RequireApproval:
		msg += " (this call cannot wait for a person, so it is refused: only a tool step (or its for_each items), a plan step or an agent's call of a durable run waits for approval (rein run --db, engine.Config.Store); for repeat rounds, give the step approval: required so that a person approves the step before its calls; or change the rule)"
	default:
		msg += " (no reviewer checks this call: a run's gate reviews it when review: names a model; until then this blocks)"
	}
	return fault.Errorf(fault.Policy, "%s", msg)
}

type result struct {
	out     any
	outcome Outcome
	err     error
}

// callBounded calls the tool on a goroutine and returns when it does, or
// when ctx is done, whichever comes first. An abandoned tool runs on; if it
// then returns anything but its context's error, that is recorded as Late.
func (p *Pipeline) callBounded(ctx context.Context, t tool.Tool, args any, rec *Record, r Recorder) (any, error) {
	// state: 0 running, 1 returned in time, 2 abandoned.
	var state atomic.Int32
	done := make(chan result, 1)
	late := *rec
	go func() {
		out, outcome, err := safeCall(ctx, t, args)
		if state.CompareAndSwap(0, 1) {
			done <- result{out, outcome, err}
			return
		}
		if r == nil || err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			return
		}
		late.Outcome, late.Abandoned, late.Err, late.Duration = Late, false, err, p.now().Sub(late.Start)
		r.Called(late)
	}()
	select {
	case res := <-done:
		rec.Outcome = res.outcome
		return res.out, res.err
	case <-ctx.Done():
		if !state.CompareAndSwap(0, 2) {
			res := <-done // it returned just as ctx ended
			rec.Outcome = res.outcome
			return res.out, res.err
		}
		rec.Outcome, rec.Abandoned = ctxOutcome(ctx), true
		return nil, fmt.Errorf("tool %s: %w; it had not returned, and whatever it returns now is discarded", late.Tool, context.Cause(ctx))
	}
}

func ctxOutcome(ctx context.Context) Outcome {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return TimedOut
	}
	return Cancelled
}

// safeCall calls t; a panic becomes a business error.
func safeCall(ctx context.Context, t tool.Tool, args any) (out any, outcome Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, outcome = nil, Panicked
			err = fault.Errorf(fault.Business, "panicked: %v\n%s", p, firstLines(debug.Stack(), 12))
		}
	}()
	out, err = t.Call(ctx, args)
	if err != nil {
		return nil, Failed, err
	}
	return out, OK, nil
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
