package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// handler calls sv through the pipeline, journaled in the ledger. A call
// the gate holds for a person (require_approval: the default rule
// inferred-drives-effect holds for a side effect the host's model wrote)
// is put to the host's user with MCP elicitation when the client supports
// it (approval.go): accepted, it is made once, with the same key;
// declined, cancelled, or with no way to ask, it is refused. Its error
// return is for the protocol only; the tool's own failures and refusals
// are results with IsError.
func (s *Server) handler(sv *served) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		ctx, span := startCall(ctx, req.Params.Meta, sv.spec.Name)
		defer func() { endCall(span, res) }()
		return s.call(tenantScope(ctx, req), sv, req)
	}
}

// tenantScope scopes ctx to the tenant the HTTP surface in front of this
// server named in the request's runs.TenantHeader (rein serve sets it for
// a token of one tenant, over what the client sent): runs_list and
// runs_show then see, and the workflow tools start and touch, only that
// tenant's runs. A request without it (stdio, an admin token, a server
// without tokens) is not scoped.
func tenantScope(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	if req.Extra == nil || req.Extra.Header == nil {
		return ctx
	}
	if t := req.Extra.Header.Values(runs.TenantHeader); len(t) == 1 && t[0] != "" {
		return runs.WithTenant(ctx, t[0])
	}
	return ctx
}

// call answers one tools/call request (handler's work, inside its span).
func (s *Server) call(ctx context.Context, sv *served, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args any = map[string]any{}
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return s.failure(fmt.Errorf("arguments of tool %s are not JSON: %w", sv.spec.Name, err)), nil
		}
	}
	rec := &callRecorder{ctx: ctx, s: s, spec: &sv.spec}
	r := &invoke.Request{Tool: sv.tool, Spec: &sv.spec, Args: args, Provenance: s.prov(&sv.spec, args),
		Input: sv.input, Output: sv.output, Recorder: rec, Pausable: true}
	if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
		// the host's user answered: the call it was asked about, approved or refused.
		if err := s.answered(req.Params, rec, r); err != nil {
			return s.failure(err), nil
		}
	} else {
		// The idempotency key is "<ledger run>/<tool>/<n>", n counting
		// this server's calls (the record's attempt): the ledger's run
		// id is new in every process, so no two calls share a key.
		r.At = invoke.Position{RunID: s.ledger.id, StepID: sv.spec.Name, Attempt: int(s.calls.Add(1))}
	}
	if l := s.ledger; l != nil && l.st != nil {
		// a served tool's resources are checked against the invalidated
		// ones, as every call of a run (invoke.Invalid); each call on its
		// own, since a host's calls share no data flow rein can see.
		ctx = invoke.WithInvalid(ctx, &invoke.Invalid{Store: l.st})
	}
	out, outcome, err := s.pipeline.Call(ctx, r)
	if outcome == invoke.AwaitingApproval {
		if !canElicit(req.Session) {
			err = fault.New(fault.Policy, fmt.Errorf("%w; this MCP host cannot ask its user (its client does not support elicitation), so the call was refused and nothing was done; %s", err, s.instead(sv.spec.Name)))
			rec.refused(r, err, nil)
			return s.failure(err), nil
		}
		return s.ask(r, err), nil
	}
	if err != nil {
		return s.failure(err), nil
	}
	return s.answer(out), nil
}

// canElicit reports whether the client of ss said it can ask its user
// (the elicitation capability).
func canElicit(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// maxAskedArgs bounds the arguments an approval's message shows.
const maxAskedArgs = 16 << 10

// approvalMessage is what the host's user is asked: the tool, its effect,
// the exact arguments (their first maxAskedArgs bytes, saying so when cut)
// and why the gate wants a person.
func approvalMessage(r *invoke.Request, held error) string {
	args, _ := json.Marshal(r.Args)
	if len(args) > maxAskedArgs {
		args = fmt.Appendf(args[:maxAskedArgs:maxAskedArgs], "… (%d bytes in all)", len(args))
	}
	effect := string(r.Spec.Effect)
	if r.Spec.Reversibility != "" {
		effect += ", " + string(r.Spec.Reversibility)
	}
	return fmt.Sprintf("Approve this call? Tool %s (effect %s) with arguments %s. Why you are asked: %v. Accept makes the call once; decline refuses it.",
		r.Spec.Name, effect, args, held)
}

// instead says how a person may have name's work done when the host
// cannot ask its user.
func (s *Server) instead(name string) string {
	var b strings.Builder
	b.WriteString("to go on, use an MCP host that supports elicitation (its user is asked to approve this exact call)")
	if dir := s.routes[name]; dir != "" {
		fmt.Fprintf(&b, ", or have a person run the flow (rein run %s --input FILE: its gate and approval steps ask a person)", dir)
	}
	b.WriteString(", or have the rule that holds it changed")
	return b.String()
}

// callRecorder journals one served call in the ledger: its start before a
// tool that is not idempotent is called (a start that cannot be journaled
// stops the call), then its record, carrying every decision on it (the
// gate's, the host's user's); it writes the gate's refusals to the log.
type callRecorder struct {
	ctx  context.Context
	s    *Server
	spec *tool.Spec

	mu sync.Mutex
	// gates are the decisions recorded so far (a held call's, then its
	// approval's).
	gates []journal.CallGate
}

func (c *callRecorder) GateDecided(at invoke.Position, inv *safety.Invocation, d safety.Decision) {
	if c.s.recorder != nil {
		c.s.recorder.GateDecided(at, inv, d)
	}
}

// Starting journals the start of a call of a tool that is not idempotent,
// before it is made.
func (c *callRecorder) Starting(rec invoke.Record, spec tool.Spec) error {
	if spec.Idempotent {
		return nil
	}
	if err := c.s.ledger.commit(c.ctx, c.record(&rec, journal.CallStarted, false)); err != nil {
		return fault.New(fault.Transient, fmt.Errorf("%w; the call was not made: try again", err))
	}
	return nil
}

// Called journals the call's record: settled, waiting for a person, or
// started still (abandoned while its tool runs on).
func (c *callRecorder) Called(rec invoke.Record) {
	if c.s.recorder != nil {
		c.s.recorder.Called(rec)
	}
	status := journal.CallFailed
	switch rec.Outcome {
	case invoke.OK, invoke.PremiseFailed:
		status = journal.CallSucceeded
	case invoke.AwaitingApproval:
		status = journal.CallWaiting
	case invoke.Late:
		status = journal.CallLate
	case invoke.Cancelled:
		if rec.Abandoned {
			status = journal.CallStarted
		}
	}
	c.journal(c.record(&rec, status, true))
}

// held returns the gate's decision that held the call for a person (the
// last one recorded), or nil.
func (c *callRecorder) held() *journal.CallGate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.gates) == 0 {
		return nil
	}
	g := c.gates[len(c.gates)-1]
	return &g
}

// decided adds a person's decision to the call's record.
func (c *callRecorder) decided(g journal.CallGate) {
	c.mu.Lock()
	c.gates = append(c.gates, g)
	c.mu.Unlock()
}

// refused journals the record of r refused with err (after d, when set):
// failed, not made.
func (c *callRecorder) refused(r *invoke.Request, err error, d *journal.CallGate) {
	if d != nil {
		c.decided(*d)
	}
	rec := invoke.Record{At: r.At, Key: r.At.Key(), Tool: r.Spec.Name, Args: r.Args, Provenance: r.Provenance,
		Outcome: invoke.AwaitingApproval, Err: err}
	c.journal(c.record(&rec, journal.CallFailed, false))
}

// record is rec's record with status, carrying the decisions so far and
// rec's; keep adds rec's decision to those.
func (c *callRecorder) record(rec *invoke.Record, status journal.CallStatus, keep bool) *journal.Call {
	cl := rec.Journal(status, c.spec, false)
	c.mu.Lock()
	defer c.mu.Unlock()
	gates := append(c.gates[:len(c.gates):len(c.gates)], cl.Gate...)
	if keep {
		c.gates = gates
	}
	cl.Gate = gates
	return cl
}

// journal commits cl; a record that cannot be committed is logged (the
// call's start, when journaled, stays on record: its outcome unknown).
func (c *callRecorder) journal(cl *journal.Call) {
	err := c.s.ledger.commit(context.WithoutCancel(c.ctx), cl)
	if err != nil && c.s.recorder != nil {
		if l, ok := c.s.recorder.(*GateLog); ok {
			l.Note(fmt.Sprintf("call %s of tool %s: %v", cl.Key, cl.Name, err))
		}
	}
}

var (
	_ invoke.Recorder = (*callRecorder)(nil)
	_ invoke.Starter  = (*callRecorder)(nil)
)
