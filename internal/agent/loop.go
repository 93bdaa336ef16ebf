package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

// Status is how a Run ended.
type Status string

// Run statuses.
const (
	// StatusAnswered: the model gave a final answer (valid under
	// Config.Output).
	StatusAnswered Status = "answered"
	// StatusPaused: calls wait for a person (Result.Pending); give
	// Session.Decisions and Run again.
	StatusPaused Status = "waiting"
	// StatusHandedBack: the loop, a handed-over sub-run's, handed the
	// conversation back to an agent before it (Result.Back); only a
	// sub-run ends so (handback.go).
	StatusHandedBack Status = "handed_back"
)

// Usage sums a Session's turns.
type Usage struct {
	Turns     int `json:"turns"`
	ToolCalls int `json:"tool_calls"`
	LLMCalls  int `json:"llm_calls"`
	TokensIn  int `json:"tokens_in"`
	TokensOut int `json:"tokens_out"`
	// Handoffs counts the transfers of the conversation (handoffs and
	// hand-backs), those of the agents it went to counted in.
	Handoffs int `json:"handoffs,omitempty"`
}

// Pending is a call that waits for a person.
type Pending struct {
	// Ref is the call's name in Session.Decisions: turn<t>/call<c>.
	Ref  string `json:"ref"`
	Turn int    `json:"turn"`
	Call int    `json:"call"`
	Tool string `json:"tool"`
	Args string `json:"args"`
	// Kind is "approval" (the call has not run) or "unknown" (it may have).
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	// ArgsSHA is the sha256 (hex) of the canonical JSON of the arguments
	// the tool would be called with (a plan step's: of its resolved args);
	// the approval is for exactly these.
	ArgsSHA string `json:"args_sha256,omitempty"`
	// Rule says who asked (the gate's rule, or approval: required).
	Rule string `json:"rule,omitempty"`
	// Guardrail names the guardrail (on_trip: ask) whose trip waits, for
	// a Pending that is no call (Ref GuardRef; Tool and Args empty).
	Guardrail string `json:"guardrail,omitempty"`
	// Trip is the guardrail's trip (its side and why, in its words), for
	// a Pending that waits on one.
	Trip *GuardTrip `json:"trip,omitempty"`
}

// Result is what a Run came to.
type Result struct {
	Status Status
	// Answer is the final answer's value (StatusAnswered).
	Answer  any
	Usage   Usage
	Pending []Pending
	// Back is the hand-back of StatusHandedBack.
	Back *HandBack
}

// UsageOf sums the turns of s, with the sub-runs of its calls of
// sub-agents (their turns, calls, model calls and tokens count as the
// caller's).
func UsageOf(s *Session) Usage {
	u := Usage{Turns: len(s.Turns)}
	for i := range s.Turns {
		t := &s.Turns[i]
		u.ToolCalls += len(t.Calls)
		u.LLMCalls += t.LLMCalls
		u.TokensIn += t.Usage.In
		u.TokensOut += t.Usage.Out
		for j := range t.Calls {
			if t.Calls[j].Back != nil {
				u.Handoffs++
			}
			if sr := t.Calls[j].Sub; sr != nil {
				if sr.Handoff {
					u.Handoffs++
				}
				u.Handoffs += sr.Usage.Handoffs
				u.Turns += sr.Usage.Turns
				u.ToolCalls += sr.Usage.ToolCalls
				u.LLMCalls += sr.Usage.LLMCalls
				u.TokensIn += sr.Usage.TokensIn
				u.TokensOut += sr.Usage.TokensOut
			}
		}
	}
	return u
}

// Run advances s until the model answers, a call waits for a person, or
// an error stops it. It continues from s.Turns: settles the last turn's
// open calls first (with s.Decisions), then asks the model for the next
// turn. Errors: a fault.Budget error naming the budget that ran out; the
// model's own errors as classed; a fault.Format error for a final answer
// that still breaks Config.Output after one corrective request; the
// Journal's errors; ctx's cause when cancelled (calls in flight are
// cancelled and left StatusChosen, uncommitted). On error s holds every
// turn committed so far and the Result its usage.
func (l *Loop) Run(ctx context.Context, s *Session) (*Result, error) {
	if s.Started.IsZero() {
		s.Started = l.cfg.Now()
	}
	if d := l.cfg.Budgets.Timeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, s.Started.Add(d),
			fault.BudgetErr("timeout", "agent: wall-time budget of %s ran out (budgets.timeout)", d))
		defer cancel()
	}
	if l.subs && l.cfg.Journal != nil {
		// sub-runs commit from their calls' goroutines too.
		c := *l
		c.cfg.Journal = &lockedJournal{j: l.cfg.Journal}
		l = &c
	}
	res := &Result{}
	if len(s.Turns) == 0 {
		asks, err := l.guard(ctx, true, 0, s.Task, nil)
		if err != nil {
			return res, err
		}
		if res.Pending, err = decide(s, 0, asks); err != nil || len(res.Pending) > 0 {
			if err == nil {
				res.Status = StatusPaused
			}
			return res, err
		}
	}
	var conv conversation
	fresh := false
	if l.unit != nil && l.unit.Call > 0 {
		fresh = !l.unit.Lost // the driver knows whether the call was dispatched
	} else if len(s.Turns) == 0 {
		if t := l.continueWith(s); t != nil {
			if err := l.commitTurn(ctx, s, t); err != nil {
				return res, err
			}
			fresh = true
		}
	}
	for {
		if n := len(s.Turns); n > 0 {
			last := &s.Turns[n-1]
			if last.Final {
				// an answer that tripped guardrails that ask is committed
				// (a resume never asks the model for it again) and
				// accepted once people approve each trip.
				pend, err := decide(s, last.N, last.Guard)
				res.Usage = UsageOf(s)
				if err != nil {
					return res, err
				}
				if res.Pending = pend; len(pend) > 0 {
					res.Status = StatusPaused
					return res, nil
				}
				res.Status, res.Answer = StatusAnswered, last.Answer
				return res, nil
			}
			if err := l.settle(ctx, s, last, fresh, res); err != nil {
				res.Usage = UsageOf(s)
				return res, l.cause(ctx, err)
			}
			if len(res.Pending) > 0 {
				res.Status, res.Usage = StatusPaused, UsageOf(s)
				return res, nil
			}
			if l.unit != nil && l.unit.Call > 0 {
				res.Status, res.Usage = StatusStepped, UsageOf(s)
				return res, nil
			}
			if b := backOf(last); b != nil && !l.own(b) {
				// the conversation went back to an agent before this one:
				// this loop ends, and so does each up to that agent.
				res.Status, res.Back, res.Usage = StatusHandedBack, b, UsageOf(s)
				return res, nil
			}
			if h := handedOff(last); h != nil {
				// the agent the conversation went to answered: its answer
				// is this loop's, committed as the final turn.
				if err := l.commitTurn(ctx, s, finalOf(len(s.Turns)+1, h)); err != nil {
					res.Usage = UsageOf(s)
					return res, err
				}
				continue
			}
		}
		if l.held() {
			res.Usage = UsageOf(s)
			return res, ErrHeld // no further turn: the run is paused
		}
		if err := l.turn(ctx, s, conv.extend(l, s)); err != nil {
			res.Usage = UsageOf(s)
			return res, l.cause(ctx, err)
		}
		if l.unit != nil && !s.Turns[len(s.Turns)-1].Final {
			// the turn is committed, its calls chosen: each is a unit of
			// its own.
			res.Status, res.Usage = StatusStepped, UsageOf(s)
			return res, nil
		}
		fresh = true
	}
}

// cause prefers the wall-time budget's error to the cancellation it caused.
func (l *Loop) cause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if c := context.Cause(ctx); c != nil && fault.BudgetOf(c) != "" && fault.BudgetOf(err) == "" {
			return c
		}
	}
	return err
}

// turn asks the model for the next turn, commits it, and runs its calls.
func (l *Loop) turn(ctx context.Context, s *Session, msgs []model.Message) error {
	u := UsageOf(s)
	b := &l.cfg.Budgets
	if u.Turns >= b.MaxTurns {
		return fault.BudgetErr("max_turns", "agent: turn budget exhausted: %d turns taken and the model has not answered (budgets.max_turns: %d)", u.Turns, b.MaxTurns)
	}
	if b.MaxTokens > 0 && u.TokensIn+u.TokensOut >= b.MaxTokens {
		return fault.BudgetErr("max_tokens", "agent: token budget exhausted: %d tokens used (budgets.max_tokens: %d)", u.TokensIn+u.TokensOut, b.MaxTokens)
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	t := Turn{N: len(s.Turns) + 1}
	msgs, err := l.fit(ctx, s, &t, msgs)
	if err != nil {
		return err
	}
	req := &model.Request{Model: l.cfg.ModelName, Messages: msgs, Tools: l.defs, Decision: "agent", Turn: t.N,
		RunID: l.cfg.RunID, StepID: l.cfg.StepID, Attempt: l.cfg.Attempt, SubRun: l.cfg.parent, Aside: l.cfg.aside}
	resp, err := l.generate(ctx, req, &t)
	if err != nil {
		return &ModelError{Turn: t.N, Model: l.cfg.ModelName, Err: err}
	}
	if resp == nil {
		return fault.BusinessErr(fmt.Errorf("agent: turn %d: model %s returned no response", t.N, l.cfg.ModelName))
	}
	t.Text = resp.Text
	if len(resp.ToolCalls) == 0 {
		if err := l.final(ctx, req, resp, &t); err != nil {
			return err
		}
		var v any
		if l.cfg.Output != nil {
			v = t.Answer
		}
		asks, err := l.guard(ctx, false, t.N, t.Text, v)
		if err != nil {
			return err
		}
		t.Guard = asks
		return l.commitTurn(ctx, s, &t)
	}
	if left := b.MaxToolCalls - u.ToolCalls; len(resp.ToolCalls) > left {
		return fault.BudgetErr("max_tool_calls", "agent: tool-call budget exhausted: turn %d asks for %d calls, %d of %d remain (budgets.max_tool_calls); none of them ran", t.N, len(resp.ToolCalls), left, b.MaxToolCalls)
	}
	if err := l.checkHandoffs(t.N, l.handoffsAsked(resp.ToolCalls), u.Handoffs); err != nil {
		return err
	}
	t.Calls = make([]Call, len(resp.ToolCalls))
	for i, tc := range resp.ToolCalls {
		t.Calls[i] = l.check(t.N, i+1, tc)
	}
	if err := l.commitTurn(ctx, s, &t); err != nil {
		return err
	}
	if b.MaxTokens > 0 && t.Usage.In+t.Usage.Out+u.TokensIn+u.TokensOut > b.MaxTokens {
		return fault.BudgetErr("max_tokens", "agent: token budget exhausted: %d tokens used after turn %d (budgets.max_tokens: %d); its calls did not run", t.Usage.In+t.Usage.Out+u.TokensIn+u.TokensOut, t.N, b.MaxTokens)
	}
	return nil // the loop settles the committed calls next
}

// generate asks the model for t's reply, and asks again after a
// transient error, up to Config.ModelRetries times, each after
// Config.RetryWait; every request counts in t (LLMCalls, Usage). The
// turn's tool calls are not made yet: only the model call is repeated.
func (l *Loop) generate(ctx context.Context, req *model.Request, t *Turn) (*model.Response, error) {
	for n := 1; ; n++ {
		resp, err := l.cfg.Model.Generate(ctx, req)
		t.LLMCalls++
		if resp != nil {
			t.Usage.In += resp.Usage.In
			t.Usage.Out += resp.Usage.Out
		}
		if err == nil || n > l.cfg.ModelRetries || fault.ClassOf(err) != fault.Transient || ctx.Err() != nil {
			return resp, err
		}
		var wait time.Duration
		if l.cfg.RetryWait != nil {
			wait = l.cfg.RetryWait(l.cfg.RunID, n, err)
		}
		if serr := l.cfg.Sleep(ctx, wait); serr != nil {
			return nil, serr
		}
	}
}

// commitTurn journals t and appends it to s.
func (l *Loop) commitTurn(ctx context.Context, s *Session, t *Turn) error {
	if l.cfg.Journal != nil {
		if err := l.cfg.Journal.CommitTurn(ctx, t); err != nil {
			return fmt.Errorf("agent: commit turn %d: %w", t.N, err)
		}
	}
	s.Turns = append(s.Turns, *t)
	return nil
}

// final accepts a final answer: the text, or under Config.Output a JSON
// value valid against it, after at most one corrective request.
func (l *Loop) final(ctx context.Context, req *model.Request, resp *model.Response, t *Turn) error {
	t.Final = true
	if l.cfg.Output == nil {
		t.Answer = resp.Text
		return nil
	}
	v, perr := model.ParseJSON[any](resp.Text, l.cfg.Output)
	if perr == nil {
		t.Answer = v
		return nil
	}
	next := *req
	next.Corrective = true
	next.Messages = append(append([]model.Message(nil), req.Messages...),
		model.Message{Role: model.Assistant, Content: resp.Text},
		model.Message{Role: model.User, Content: model.CorrectionPrompt(perr)})
	resp2, err := l.generate(ctx, &next, t)
	if err != nil {
		return &ModelError{Turn: t.N, Model: l.cfg.ModelName, Corrective: true, Err: err}
	}
	if resp2 == nil || len(resp2.ToolCalls) > 0 {
		return fault.FormatErr(fmt.Errorf("agent: turn %d: the final answer %w; the corrective request was answered with tool calls, not a corrected answer", t.N, perr))
	}
	if v, err = model.ParseJSON[any](resp2.Text, l.cfg.Output); err != nil {
		return fault.FormatErr(fmt.Errorf("agent: turn %d: the final answer still breaks the output schema after one corrective request: %w", t.N, err))
	}
	t.Text, t.Answer = resp2.Text, v
	return nil
}
