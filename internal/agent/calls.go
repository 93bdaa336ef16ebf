package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine/sched/fan"
	"github.com/reinhq/rein/internal/fanout"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value"
)

// check turns the model's call into a Call: StatusChosen when it names a
// tool the loop offers and its arguments are a JSON object, otherwise
// StatusInvalid with an observation that says what to fix. The input
// schema is the pipeline's to check. The call names the tool by its own
// name, whichever name the model used.
func (l *Loop) check(turn, index int, tc model.ToolCall) Call {
	c := Call{Index: index, ID: tc.ID, Tool: tc.Name, Args: tc.Args, Status: StatusChosen, Key: l.key(turn, index)}
	b, ok := l.named(tc.Name)
	if !ok {
		c.Status = StatusInvalid
		c.Observation = fmt.Sprintf("invalid call: there is no tool %q; the tools are %s. Call one of them.", cut(tc.Name, 80), l.toolNames())
		return c
	}
	c.Tool = b.spec.Name
	if n := len(tc.Args); n > l.cfg.MaxArgsBytes {
		// refused before anything reads them; only a preview is kept, in
		// the transcript (and so in what goes back to the model) and the
		// journal.
		c.Args = fmt.Sprintf(`{"_rein_cut": %q}`, cut(tc.Args, 64))
		c.Status = StatusInvalid
		c.Observation = fmt.Sprintf("invalid call of %s: its arguments are %d bytes, more than max_args_bytes %d. Send smaller arguments: refer to large data by an id or a path instead of including it.", b.wire, n, l.cfg.MaxArgsBytes)
		return c
	}
	args, err := parseArgs(tc.Args)
	if err != nil {
		c.Status = StatusInvalid
		c.Observation = fmt.Sprintf("invalid call of %s: %v. Send the arguments as one JSON object.", b.wire, err)
		return c
	}
	if b.declares {
		d, ps := takeDeclaration(args)
		if len(ps) > 0 {
			c.Status = StatusInvalid
			c.Observation = fmt.Sprintf("invalid call of %s: its %s is invalid: %s. Fix it and call again.", b.wire, DeclarationArg, describeProblems(ps))
			return c
		}
		c.Declaration = d
	}
	c.args = args
	return c
}

// parseArgs decodes a call's arguments: one JSON object ("" is {}).
func parseArgs(raw string) (map[string]any, error) {
	if strings.TrimSpace(raw) == "" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("the arguments are not JSON (%w, at byte %d of %s)", err, se.Offset, quoteCut(raw, 120))
		}
		return nil, fmt.Errorf("the arguments are not JSON (%w): %s", err, quoteCut(raw, 120))
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("at (root): the arguments must be a JSON object, got %s", quoteCut(raw, 60))
	}
	return m, nil
}

// toolNames lists the tools by the names the model knows them by.
func (l *Loop) toolNames() string {
	names := make([]string, 0, len(l.wire))
	for n := range l.wire {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (l *Loop) key(turn, call int) string {
	p := l.position(turn, call)
	return p.Key()
}

func (l *Loop) position(turn, call int) invoke.Position {
	return invoke.Position{RunID: l.cfg.RunID, StepID: l.cfg.StepID, Attempt: l.cfg.Attempt, Turn: turn, Call: call, Parent: l.cfg.parent}
}

// settle brings every open call of t to an outcome or a pending entry.
// Chosen calls run, unless fresh is false (t came committed from a journal,
// or a cancelled Run left them): then a call may have run already, and
// only one whose tool is safe to repeat runs again (with the same key,
// and with the approvals it used, for it is the same execution); the
// others become unknown. Waiting and unknown calls follow their Decision,
// if any, unless the call used that approval already (Call.Consumed): an
// approval authorizes one dispatch, journaled before the call runs
// (dispatch).
func (l *Loop) settle(ctx context.Context, s *Session, t *Turn, fresh bool, res *Result) error {
	var jobs []int
	var approved map[int]bool
	run := func(i int, ok bool) {
		jobs = append(jobs, i)
		if ok {
			if approved == nil {
				approved = make(map[int]bool)
			}
			approved[i] = true
		}
	}
	for i := range t.Calls {
		c := &t.Calls[i]
		if l.unit != nil && l.unit.Call > 0 && c.Index != l.unit.Call {
			continue // a unit settles its call only (Step)
		}
		d, decided := s.Decisions[Ref(t.N, c.Index)]
		if decided && c.consumed(d, Ref(t.N, c.Index)) {
			decided = false // used once already: a new decision is needed
		}
		if l.lostDispatch(t, c, d, decided) {
			decided = false
		}
		if c.Status == StatusChosen || c.Status == StatusWaiting || c.Status == StatusUnknown {
			if _, ok := l.tools[c.Tool]; !ok {
				// the transcript names a tool the loop no longer offers.
				c.Status = StatusInvalid
				c.Observation = fmt.Sprintf("invalid call: there is no tool %q any more; the tools are %s.", c.Tool, l.toolNames())
				if err := l.commitCall(ctx, t.N, c); err != nil {
					return err
				}
				continue
			}
		}
		heldBack := c.Status == StatusChosen && c.Reason == HeldReason
		if heldBack {
			// a hold kept it from starting: it never ran. Dispatched now, so
			// that a crash from here on finds it in doubt.
			if err := l.dispatch(ctx, t.N, c); err != nil {
				return err
			}
		}
		if c.Status == StatusChosen && !fresh && !heldBack && !invoke.Repeatable(&l.tools[c.Tool].spec) {
			c.Status = StatusUnknown
			c.Reason = fmt.Sprintf("the process stopped while %s may have been running; it is neither idempotent nor read-only, so it is not run again without a person", c.Tool)
			if len(c.Consumed) > 0 {
				c.Reason = fmt.Sprintf("the process stopped while %s, dispatched with a person's approval (used once; it does not count again), may have been running; it is neither idempotent nor read-only, so it is not run again without a new decision", c.Tool)
			}
			again := l.reconcile(ctx, t.N, c) // its tool's check may settle it (reconcile.go)
			if err := l.commitCall(ctx, t.N, c); err != nil {
				return err
			}
			if again {
				// the check found the approved call did not take effect:
				// it is the same dispatch, made again with its key and
				// the approvals it used.
				c.Reconciled = ""
				if err := l.dispatch(ctx, t.N, c); err != nil {
					return err
				}
			}
		}
		switch c.Status {
		case StatusChosen:
			if c.Plan != nil && len(c.Consumed) > 0 {
				// a plan dispatched with approved steps, run again (its
				// tools are safe to repeat): the same execution, with the
				// same decisions.
				l.planDecisions(s, t.N, c, true)
			}
			run(i, len(c.Consumed) > 0 && c.approvedItself(t.N))
		case StatusWaiting, StatusUnknown:
			kind := "approval"
			if c.Status == StatusUnknown {
				kind = "unknown"
			}
			if c.Sub != nil && c.Status == StatusWaiting {
				// a sub-agent's sub-run waits: its call runs again, and the
				// sub-run continues, once all its waiting calls are decided
				// (each call of it uses its approval once: its own Consumed).
				if _, undecided := subDecisionsOf(s, t.N, c); len(undecided) > 0 {
					res.Pending = append(res.Pending, undecided...)
					continue
				}
				if err := l.dispatch(ctx, t.N, c); err != nil {
					return err
				}
				run(i, false)
				continue
			}
			if c.Plan != nil && c.Status == StatusWaiting {
				// a plan waits: it runs again once all its waiting steps are decided
				if undecided := l.planDecisions(s, t.N, c, false); len(undecided) > 0 {
					res.Pending = append(res.Pending, undecided...)
					continue
				}
				if err := l.dispatch(ctx, t.N, c, c.planApprovals(t.N)...); err != nil {
					return err
				}
				// the plan continues the execution a person approved, if
				// one did: its call is not asked again.
				run(i, c.approvedItself(t.N))
				continue
			}
			if !decided {
				res.Pending = append(res.Pending, c.pending(t.N, kind)...)
				continue
			}
			switch d.Verdict {
			case Approve:
				if err := l.bound(t.N, c, d); err != nil {
					return err
				}
				if err := l.dispatch(ctx, t.N, c, Consumed{ID: d.ID, Ref: Ref(t.N, c.Index)}); err != nil {
					return err
				}
				run(i, true)
				continue
			case Settle:
				if c.Status != StatusUnknown {
					return fault.Errorf(fault.Business, "agent: call %s waits for approval; settle is for calls whose outcome is unknown: approve or reject it", Ref(t.N, c.Index))
				}
				c.Status = StatusOK
				c.Observation, c.Blob = l.observe(ctx, d.Output)
			default:
				c.Status, c.Observation = StatusRejected, "rejected by a person: "+d.Comment
			}
			if err := l.commitCall(ctx, t.N, c); err != nil {
				return err
			}
		}
	}
	if len(jobs) > 0 && l.subs {
		for _, i := range jobs {
			if c := &t.Calls[i]; l.tools[c.Tool].sub != nil {
				c.subDecisions, _ = subDecisionsOf(s, t.N, c)
				c.left = l.left(s)
				if h := l.tools[c.Tool].Handoff; h != "" {
					c.handover = l.handoverOf(s, t, c, h)
					if continues(s, t, c) {
						c.handover.agents = s.Agent[1:]
					}
					if c.Sub == nil {
						c.left.MaxHandoffs-- // this transfer, not counted until it runs
					}
				}
			}
		}
	}
	if len(jobs) > 0 {
		var ev *safety.Evidence // built before any call runs, only if one is traced
		if l.tracesAny(t, jobs) {
			ev = l.evidence(s, t.N)
		}
		if err := l.runCalls(ctx, t, jobs, approved, ev); err != nil {
			return err
		}
		for _, i := range jobs {
			if c := &t.Calls[i]; c.stop != nil {
				err := c.stop
				c.stop = nil
				return err
			}
		}
	}
	for _, i := range jobs {
		if c := &t.Calls[i]; c.Status == StatusWaiting {
			c.subDecisions, c.left = nil, nil
			res.Pending = append(res.Pending, c.pending(t.N, "approval")...)
		}
	}
	return nil
}

// dispatch journals c as dispatched before it runs with a person's
// approval: StatusChosen, its args' digest, and the approvals it uses
// (used). A resume that finds it so treats it as any chosen call that may
// have run; the approvals never count again.
func (l *Loop) dispatch(ctx context.Context, turn int, c *Call, used ...Consumed) error {
	c.Status, c.Reason = StatusChosen, ""
	if d := l.argsDigest(c); d != "" {
		c.ArgsSHA = d
	}
	c.Consumed = append(c.Consumed, used...)
	return l.commitCall(ctx, turn, c)
}

// bound checks that the approval d is for c's arguments as they are: the
// digest of the arguments the person approved (d.Args) must be the call's.
// A mismatch is a policy error naming both digests.
func (l *Loop) bound(turn int, c *Call, d Decision) error {
	if d.Args == "" {
		return nil
	}
	want := l.argsDigest(c)
	got := l.digestOf(c.Tool, d.Args)
	if want == got {
		return nil
	}
	return fault.Errorf(fault.Policy, "agent: call %s of tool %s: the approval %s was given for arguments with sha256 %s, but the call's arguments have sha256 %s; it is refused: an approval is for exactly the call it names, so ask for a new one",
		Ref(turn, c.Index), c.Tool, d.ID, got, want)
}

// argsDigest is the sha256 of the canonical JSON of the arguments c's tool
// is called with ("" when they are not a JSON object).
func (l *Loop) argsDigest(c *Call) string {
	return l.digestOf(c.Tool, c.Args)
}

// digestOf is the digest of raw, a call's arguments as the model wrote
// them, as the tool named name is called with them: without the
// declaration argument of a tool that takes one.
func (l *Loop) digestOf(name, raw string) string {
	args, err := parseArgs(raw)
	if err != nil {
		return ""
	}
	if bt, ok := l.tools[name]; ok && bt.declares {
		delete(args, DeclarationArg)
	}
	b, err := value.Canonical(args)
	if err != nil {
		return ""
	}
	return value.Digest(b)
}

// planDecisions gives the waiting execute_plan call c its people's
// decisions, by plan step, and returns the pending entries of the steps
// still undecided. A decision c used already counts only for the same
// execution (again: c was dispatched with it and runs again).
func (l *Loop) planDecisions(s *Session, turn int, c *Call, again bool) []Pending {
	var undecided []Pending
	c.decisions = make(map[string]Decision, len(c.Plan.Waiting))
	for _, p := range c.pending(turn, "approval") {
		d, ok := s.Decisions[p.Ref]
		if !ok || !again && c.consumed(d, p.Ref) {
			undecided = append(undecided, p)
			continue
		}
		c.decisions[p.Ref[len(Ref(turn, c.Index))+1:]] = d
	}
	return undecided
}

// planApprovals are the approvals of c's plan steps that its decisions
// use (the approved ones).
func (c *Call) planApprovals(turn int) []Consumed {
	var out []Consumed
	for _, w := range c.Plan.Waiting {
		if d, ok := c.decisions[w.ID]; ok && d.Verdict == Approve {
			out = append(out, Consumed{ID: d.ID, Ref: Ref(turn, c.Index) + "/" + w.ID})
		}
	}
	return out
}

// runCalls runs the calls t.Calls[i] for i in jobs as the machine decides
// (a fan.Fan: in order, at most Config.Concurrency at once) and commits
// each outcome as it comes, on the goroutine that called Run. A failed
// commit cancels the calls still running and stops the turn. On
// cancellation the calls still running are cancelled and left chosen.
func (l *Loop) runCalls(ctx context.Context, t *Turn, jobs []int, approved map[int]bool, ev *safety.Evidence) error {
	var m fan.Fan
	m.Reset(len(jobs), l.cfg.Concurrency)
	var failed error // the first commit that failed
	var paused error // the first call whose output contradicts a premise
	begun := make([]bool, len(jobs))
	err := fanout.Run(ctx, fanout.Held[fan.Unit]{Source: &m, Held: l.cfg.Held}, func(cctx context.Context, u fan.Unit) bool {
		i := jobs[u.Index]
		begun[u.Index] = true // each unit its own element: no race
		return l.call(cctx, t.N, &t.Calls[i], approved[i], ev)
	}, func(u fan.Unit, done bool) error {
		m.Settle(u.Index)
		if !done || failed != nil {
			return nil // cancelled: the call stays chosen
		}
		c := &t.Calls[jobs[u.Index]]
		if err := l.commitCall(ctx, t.N, c); err != nil {
			failed = err
			m.Stop()
			return err
		}
		if c.premise != nil && paused == nil {
			// the calls in flight finish; no further call starts, and no
			// further turn is taken: the run pauses (its caller parks it).
			paused = fault.BusinessErr(fmt.Errorf("agent: call %s: %w", Ref(t.N, c.Index), c.premise))
			m.Stop()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if paused != nil {
		return paused
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if !m.Done() && l.held() {
		return l.holdCalls(ctx, t, jobs, begun)
	}
	return nil
}

// holdCalls commits the calls of jobs a hold kept from starting (not
// begun) with Reason HeldReason, so that a later Run starts them as
// never run, and returns ErrHeld.
func (l *Loop) holdCalls(ctx context.Context, t *Turn, jobs []int, begun []bool) error {
	for k, i := range jobs {
		if c := &t.Calls[i]; !begun[k] && c.Status == StatusChosen {
			c.Reason = HeldReason
			if err := l.commitCall(ctx, t.N, c); err != nil {
				return err
			}
		}
	}
	return ErrHeld
}

// call runs one call through the pipeline and fills in its outcome. It
// returns false when ctx ended first: the call stays chosen. ev is what
// its arguments are traced to and its declaration checked against (nil
// when no call of the turn is traced).
func (l *Loop) call(ctx context.Context, turn int, c *Call, approved bool, ev *safety.Evidence) bool {
	bt := l.tools[c.Tool]
	args := c.args
	if args == nil {
		args, _ = parseArgs(c.Args) // checked when the turn was taken
		if bt.declares {
			delete(args, DeclarationArg) // c.Declaration holds it
		}
	}
	if msg := l.mustPlan(ctx, bt, approved); msg != "" {
		c.Status, c.Observation = StatusBlocked, msg
		return true
	}
	t := bt.Tool.Tool
	if bt == l.plannerTool() {
		args = l.ownStepTools(args)
		t = tool.Func(bt.spec, func(ctx context.Context, args any) (any, error) { // this loop's recorder, journal and keys
			return l.executePlan(ctx, turn, c, args, approved, ev)
		})
	}
	if bt.sub != nil {
		t = tool.Func(bt.spec, func(ctx context.Context, a any) (any, error) {
			m, _ := a.(map[string]any)
			return l.runSub(ctx, turn, c, bt, m)
		})
	}
	if bt.back != nil {
		t = tool.Func(bt.spec, func(_ context.Context, a any) (any, error) {
			m, _ := a.(map[string]any)
			return l.handBack(c, bt, m), nil
		})
	}
	req := invoke.Request{Tool: t, Spec: &bt.spec, Args: args, At: l.position(turn, c.Index),
		Recorder: l.cfg.Recorder, RequireApproval: bt.Approval, Pausable: true, Approved: approved}
	if l.traces(bt) {
		l.trace(ev, bt, c, args, &req)
	}
	if bt.input != nil {
		req.Input = bt.input
	}
	if bt.output != nil {
		req.Output = bt.output
	}
	cctx, cancel := context.WithTimeout(ctx, l.cfg.CallTimeout)
	out, outcome, err := l.cfg.Pipeline.Call(cctx, &req)
	cancel()
	if ctx.Err() != nil && !outcome.Returned() {
		return false
	}
	c.Reason = ""
	var sp *subPaused
	if outcome != invoke.OK && errors.As(err, &sp) {
		c.Status, c.Observation = StatusWaiting, ""
		c.Reason = sp.Error()
		return true
	}
	if outcome != invoke.OK {
		if cs := (*callerStop)(nil); errors.As(err, &cs) { // scoped: no allocation for a call that succeeded
			c.stop = cs.err
		}
	}
	var pw *planPaused
	if outcome != invoke.OK && errors.As(err, &pw) {
		c.Status, c.Plan, c.Observation = StatusWaiting, pw.wait, ""
		c.Reason = "a step of its plan needs a person's approval"
		return true
	}
	c.Plan, c.decisions = nil, nil
	c.premise = tool.AsPremise(err)
	switch outcome {
	case invoke.OK, invoke.PremiseFailed:
		// a call whose output contradicts its tool's premise was made: its
		// output is observed, and the loop stops after it (runCalls).
		c.Status = StatusOK
		c.Observation, c.Blob = l.observe(ctx, out)
	case invoke.AwaitingApproval:
		var ae *invoke.ApprovalError
		errors.As(err, &ae)
		c.Status, c.Reason, c.Rule = StatusWaiting, ae.Reason, ae.Reason
		c.Observation = ""
		c.ArgsSHA = l.argsDigest(c)
	case invoke.InvalidArgs:
		c.Status = StatusInvalid
		c.Observation = fmt.Sprintf("invalid call: %v. Fix the arguments and call again.", err)
	case invoke.Blocked:
		c.Status = StatusBlocked
		c.Observation = fmt.Sprintf("blocked: %v. Do not retry this call as it is.", err)
		if ve := (*invoke.VerifyError)(nil); errors.As(err, &ve) {
			c.Observation = l.verifyObservation(c, ve)
		}
	default:
		c.Status = StatusFailed
		c.Observation = l.cutText(fmt.Sprintf("error (%s): %v", fault.ClassOf(err), err))
	}
	return true
}

// ownStepTools returns execute_plan's args with each step's tool named by
// its own name where the model used the name it was offered
// ("crm__find" for "crm.find"); args is not changed.
func (l *Loop) ownStepTools(args map[string]any) map[string]any {
	steps, _ := args["steps"].([]any)
	var out []any
	for i, s := range steps {
		m, _ := s.(map[string]any)
		name, _ := m["tool"].(string)
		own, ok := l.wire[name]
		if !ok || own == name {
			continue
		}
		if out == nil {
			out = append([]any(nil), steps...)
		}
		c := make(map[string]any, len(m))
		for k, v := range m {
			c[k] = v
		}
		c["tool"] = own
		out[i] = c
	}
	if out == nil {
		return args
	}
	c := make(map[string]any, len(args))
	for k, v := range args {
		c[k] = v
	}
	c["steps"] = out
	return c
}

// commitCall journals c's outcome.
func (l *Loop) commitCall(ctx context.Context, turn int, c *Call) error {
	if l.cfg.Journal == nil {
		return nil
	}
	if err := l.cfg.Journal.CommitCall(ctx, turn, c); err != nil {
		return fmt.Errorf("agent: commit %s: %w", Ref(turn, c.Index), err)
	}
	return nil
}
