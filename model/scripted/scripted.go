package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

// Model answers requests from a script. It is safe for concurrent use; which
// reply a call gets depends only on the script and the order of calls.
//
// A reply is used once by every call of the Model (the runs of a session
// go through one script in order), or once per run after ByRun.
type Model struct {
	replies []Reply // never modified after New

	mu    sync.Mutex
	byRun bool
	runs  map[string][]bool // the replies used, by run under ByRun, else under ""
	order []string          // the runs of runs, by their first call, oldest first
	ever  []bool            // the replies any call used (Unused)
	calls int
}

// MaxRuns bounds the runs a Model under ByRun remembers the used replies
// of: the oldest run's are forgotten when another run calls it (a later
// call of that run is answered as if the run were new).
const MaxRuns = 1024

// ByRun makes m use up its replies per run (model.Request.RunID): a
// program that runs a flow many times, each run on its own, with one
// Model (a Temporal worker) answers every run from the whole script, as a
// new process would. It remembers the last MaxRuns runs. Call it before
// the first Generate.
func (m *Model) ByRun() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byRun = true
}

var _ model.Model = (*Model)(nil)

// New returns a Model answering with replies, in order. The slice is copied;
// the values inside (Output, Raw, Tokens) are shared and must not be
// modified afterwards.
func New(replies []Reply) *Model {
	return &Model{
		replies: append([]Reply(nil), replies...),
		runs:    map[string][]bool{},
		ever:    make([]bool, len(replies)),
	}
}

// Generate answers req with the first unused reply whose Step equals
// req.StepID, whose Decision (if set) matches req.Decision ("llm" matching
// ""), whose Model and Turn (if set) equal req.Model and req.Turn, and whose Contains (if set)
// occurs in req.Prompt(), and marks that reply used before waiting for its
// Delay. Errors: a business error when no unused reply matches; the
// reply's class for error replies (the returned Response then still carries
// the usage); a transient error wrapping context.DeadlineExceeded or an error
// wrapping context.Canceled when ctx ends first (a ctx already done on entry
// consumes no reply). Response.Model is left empty. The reply's text goes
// to ctx's model.DeltaFunc, when there is one, as one delta.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req == nil {
		return nil, fault.Errorf(fault.Business, "scripted model: nil request")
	}
	prompt := req.Prompt()
	m.mu.Lock()
	m.calls++
	if ctx.Err() != nil {
		m.mu.Unlock()
		return nil, ctxError(ctx, req.StepID)
	}
	i, err := m.pick(req, prompt)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	r := &m.replies[i]
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctxError(ctx, req.StepID)
		}
	}
	resp, err := answer(r, i, req.StepID, prompt)
	if resp != nil {
		// the whole reply as one delta: the streaming path, offline.
		model.SendText(ctx, req, resp.Text)
	}
	return resp, err
}

// usedBy is the set of replies run has used, made (and the oldest run
// forgotten past MaxRuns) on its first call; m.mu must be held.
func (m *Model) usedBy(run string) []bool {
	if u, ok := m.runs[run]; ok {
		return u
	}
	if len(m.order) >= MaxRuns {
		delete(m.runs, m.order[0])
		m.order = m.order[1:]
	}
	u := make([]bool, len(m.replies))
	m.runs[run] = u
	m.order = append(m.order, run)
	return u
}

// pick finds and marks the reply for req; m.mu must be held.
func (m *Model) pick(req *model.Request, prompt string) (int, error) {
	run := ""
	if m.byRun {
		run = req.RunID
	}
	usedBy := m.usedBy(run)
	var forStep, used int
	otherDecision := false
	for i := range m.replies {
		r := &m.replies[i]
		if r.Step != req.StepID {
			continue
		}
		forStep++
		if usedBy[i] {
			used++
			continue
		}
		if !decisionMatches(r.Decision, req.Decision) {
			otherDecision = true
			continue
		}
		if (r.Model == "" || r.Model == req.Model) && (r.Turn == 0 || r.Turn == req.Turn) &&
			(r.Contains == "" || strings.Contains(prompt, r.Contains)) {
			usedBy[i], m.ever[i] = true, true
			return i, nil
		}
	}
	switch {
	case forStep == 0:
		return 0, fault.Errorf(fault.Business, "scripted model: no unused reply for step %q (script has no reply for step %q)", req.StepID, req.StepID)
	case used == forStep:
		return 0, fault.Errorf(fault.Business, "scripted model: no unused reply for step %q (script has %d replies for it, all used)", req.StepID, forStep)
	case otherDecision:
		return 0, fault.Errorf(fault.Business, "scripted model: no unused reply for step %q (script has %d replies for it, %d used; the other %d want another decision, model or prompt than decision %s, model %q and this prompt)", req.StepID, forStep, used, forStep-used, decisionName(req.Decision), req.Model)
	default:
		return 0, fault.Errorf(fault.Business, "scripted model: no unused reply for step %q (script has %d replies for it, %d used; the other %d want another model or prompt than model %q and this prompt)", req.StepID, forStep, used, forStep-used, req.Model)
	}
}

// decisionMatches reports whether a reply's decision filter admits a
// request's decision.
func decisionMatches(filter, decision string) bool {
	return filter == "" || filter == decisionName(decision)
}

// decisionName names a request's decision as scripts do: "" is llm.
func decisionName(decision string) string {
	if decision == "" {
		return "llm"
	}
	return decision
}

// answer turns reply r (index i of the script) into a response or an error.
func answer(r *Reply, i int, step, prompt string) (*model.Response, error) {
	switch {
	case r.Error != "":
		msg := r.Message
		if msg == "" {
			msg = fmt.Sprintf("scripted %s error", r.Error)
		}
		return &model.Response{Usage: usage(r, prompt, "")}, fault.Errorf(r.Error, "scripted model: step %q, replies[%d]: %s", step, i, msg)
	case len(r.ToolCalls) > 0:
		return toolCallAnswer(r, i, step, prompt)
	case r.Raw != nil:
		return &model.Response{Text: *r.Raw, Usage: usage(r, prompt, *r.Raw)}, nil
	}
	what, v := "output", r.Output
	switch {
	case r.Route != "":
		what, v = "route", routeAnswer{Route: r.Route, Reason: r.Reason}
	case r.Plan != nil:
		what, v = "plan", r.Plan
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fault.Errorf(fault.Business, "scripted model: step %q, replies[%d]: %s is not JSON: %w", step, i, what, err)
	}
	text := strings.TrimSuffix(b.String(), "\n")
	return &model.Response{Text: text, Usage: usage(r, prompt, text)}, nil
}

// toolCallAnswer answers reply r (index i) with its tool calls, ids made
// for the calls without one.
func toolCallAnswer(r *Reply, i int, step, prompt string) (*model.Response, error) {
	calls := make([]model.ToolCall, len(r.ToolCalls))
	size := 0
	for j, tc := range r.ToolCalls {
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_%d_%d", i, j)
		}
		calls[j] = tc
		size += len(tc.Name) + len(tc.Args)
	}
	if err := model.CheckToolCalls(calls); err != nil {
		return nil, fault.Errorf(fault.Business, "scripted model: step %q, replies[%d]: %v", step, i, err)
	}
	resp := &model.Response{ToolCalls: calls}
	if r.Tokens != nil {
		resp.Usage = *r.Tokens
	} else {
		resp.Usage = model.Usage{In: (len(prompt) + 3) / 4, Out: (size + 3) / 4}
	}
	return resp, nil
}

// routeAnswer is how a route reply is answered: the semantic router's
// {"route", "reason"} object.
type routeAnswer struct {
	Route  string `json:"route"`
	Reason string `json:"reason"`
}

// usage is the reply's tokens, or an estimate of four bytes per token.
func usage(r *Reply, prompt, text string) model.Usage {
	if r.Tokens != nil {
		return *r.Tokens
	}
	return model.Usage{In: (len(prompt) + 3) / 4, Out: (len(text) + 3) / 4}
}

// ctxError reports why ctx ended: a deadline is transient, a cancellation
// wraps context.Canceled (class fault.Cancelled).
func ctxError(ctx context.Context, step string) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err { //nolint:errorlint // identity: a cause other than the plain ctx.Err()
		err = fmt.Errorf("%w: %w", err, cause)
	}
	err = fmt.Errorf("scripted model: step %q: %w", step, err)
	if ctx.Err() == context.DeadlineExceeded {
		return fault.TransientErr(err)
	}
	return err
}

// Unused returns the replies no call has consumed (under ByRun: no call
// of any run), in script order.
func (m *Model) Unused() []Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Reply
	for i, r := range m.replies {
		if !m.ever[i] {
			out = append(out, r)
		}
	}
	return out
}

// Calls returns how many times Generate has been called, including calls
// that failed.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}
