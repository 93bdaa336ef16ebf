package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/value"
)

// An agent step runs the agent loop (package agent) as one step attempt.
// Its turns are journaled as agent_turn events and each of its calls as
// its call record (a call event whose journal.Call carries the loop's
// part, Agent: agentrec.go), each committed at once (one commit per turn, one per settled call), so a
// resumed run rebuilds the transcript and continues: the loop never asks
// the model again for a committed turn nor repeats a call that may have
// had an effect. A call that waits for a person is an approval row of its
// own, step id "<step>/turn<t>/call<c>" (rein runs approve RUN that-id);
// once every one is decided, resuming the run runs the step again at the
// same attempt and the loop applies the decisions.

// bindAgent builds an agent step's loop from the engine's tools and
// models. Its calls, and the steps of its execute_plan calls, go through
// pipe, whose gate is the flow's (bindGate): the engine's gate joined with
// the flow's own policy: rules, as a flow's tool and plan steps are.
func (e *Engine) bindAgent(s *flow.Step, lookupModel func(name, step string) model.Model, pipe *invoke.Pipeline) (*agent.Loop, error) {
	a := s.Agent
	m := lookupModel(s.Model, s.ID)
	if m == nil {
		return nil, nil // reported by lookupModel
	}
	tools := make([]agent.Tool, 0, len(a.Tools))
	var missing []string
	for _, t := range a.Tools {
		tl, ok := e.cfg.Tools.Lookup(t.Name)
		if !ok {
			missing = append(missing, t.Name)
			continue
		}
		tools = append(tools, agent.AsTool(tl, t.Approval)) // a sub-agent, when tl is one
	}
	for _, h := range a.Handoffs {
		name := "transfer_to_" + h.Name // the loader registers each handoff's agent so
		tl, ok := e.cfg.Tools.Lookup(name)
		if !ok {
			missing = append(missing, name)
			continue
		}
		t := agent.AsTool(tl, false)
		if t.Agent == nil {
			return nil, fmt.Errorf("handoff %s: tool %s is not an agent", h.Name, name)
		}
		t.Handoff = h.History
		tools = append(tools, t)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("tools %s are not registered with the engine (known: %s)", strings.Join(missing, ", "), strings.Join(e.cfg.Tools.Names(), ", "))
	}
	var ep *agent.PlanOptions
	if !a.ExecutePlan.Disabled {
		ep = &agent.PlanOptions{MaxSteps: a.ExecutePlan.MaxSteps, AllowExternal: a.ExecutePlan.AllowExternal}
	}
	var cb *agent.ContextBudget
	if a.Context.MaxTokens > 0 {
		cb = &agent.ContextBudget{MaxTokens: a.Context.MaxTokens, Strategy: a.Context.Strategy, Prompt: a.Context.Prompt}
	}
	return agent.New(agent.Config{ExecutePlan: ep, Context: cb, Guardrails: guardrailsOf(a.Guardrails), Model: metered{name: s.Model, m: m}, ModelName: s.Model, Instructions: a.Instructions,
		Tools: tools, Pipeline: pipe, Output: s.OutputSchema, ObservationLimit: a.MaxObservationBytes, MaxArgsBytes: a.MaxArgsBytes, Concurrency: a.Concurrency,
		Budgets: agent.Budgets{MaxTurns: a.Budgets.MaxTurns, MaxToolCalls: a.Budgets.MaxToolCalls, MaxTokens: a.Budgets.MaxTokens, MaxHandoffs: a.Budgets.MaxHandoffs, Timeout: a.Budgets.Timeout},
		Now:     e.cfg.Clock.Now,
		// a sub-agent's model calls count as the step's, as its own do.
		SubModel: func(name string, m model.Model) model.Model { return metered{name: name, m: m} },
		// the step's retries and backoff are its model calls': a transient
		// model error is asked again within the turn, never the loop.
		ModelRetries: s.Retries, Sleep: e.cfg.Clock.Sleep,
		RetryWait: func(runID string, n int, err error) time.Duration {
			return max(sched.Backoff(s.Backoff, runID, s.ID, n), fault.RetryAfterOf(err))
		}})
}

// guardrailsOf are the agent loop's guardrails of a flow's (an agent's
// or an llm step's).
func guardrailsOf(gs []*flow.AgentGuardrail) []agent.Guardrail {
	out := make([]agent.Guardrail, len(gs))
	for i, g := range gs {
		out[i] = agent.Guardrail{Name: g.Name, Input: g.Input, Trips: g.Trips, Judge: g.Judge, Ask: g.Ask}
	}
	return out
}

// agentWait is the "error" of an agent step whose calls wait for a person,
// or of a plan step whose plan steps do: the step parks (settle) instead
// of failing.
type agentWait struct {
	pending []agent.Pending
}

func (w *agentWait) Error() string {
	return fmt.Sprintf("%d tool call(s) wait for a person", len(w.pending))
}

// callAgent runs step j's agent loop for one attempt: the task is the
// rendered prompt_template. A resumed attempt continues its transcript.
func (r *run) callAgent(ctx context.Context, j *job, in unitInput, attempt int) (any, error) {
	s := j.step
	ctx = withScope(ctx, &callScope{r: r, step: s, index: j.index, attempt: attempt})
	ctx = withoutDeltas(ctx, s.Agent.Guardrails)
	// the wall-time budget runs while the loop works: waiting for a person
	// (or a restart) starts it again.
	sess := &agent.Session{Task: in.prompt, History: inputHistory(r.input), Agent: inputAgent(r.input)}
	if r.d.on && r.d.firstAttempt[j.index] == attempt {
		if err := r.restoreSession(ctx, s, attempt, sess); err != nil {
			return nil, err
		}
	}
	jr := &agentJournal{r: r, step: s, attempt: attempt}
	var blobs agent.Blobs
	if r.d.on {
		blobs = jr
	}
	loop := r.b.agents[j.index].With(r.id, s.ID, attempt, jr, (*callRecorder)(r), blobs)
	if r.ev != nil {
		loop = loop.WithEvidence(r.ev)
	}
	if h := r.heldFunc(j.index); h != nil {
		loop = loop.WithHeld(h) // no further turn or call once a failed premise holds the run
	}
	res, err := loop.Run(ctx, sess)
	if errors.Is(err, agent.ErrHeld) {
		return nil, errHeld // the step stays running; a resume continues its transcript
	}
	if err != nil {
		return nil, err
	}
	if res.Status == agent.StatusPaused {
		if !r.d.on {
			var first string
			if len(res.Pending) > 0 {
				first = fmt.Sprintf(" (the first, of tool %s: %s)", res.Pending[0].Tool, res.Pending[0].Reason)
				if res.Pending[0].Guardrail != "" {
					first = fmt.Sprintf(" (the first: %s)", res.Pending[0].Reason)
				}
			}
			return nil, fault.Errorf(fault.Policy, "agent step %s: %d tool call(s) wait for a person's approval%s, which needs a durable store: run it with one (rein run --db, or engine.Config.Store)",
				s.ID, len(res.Pending), first)
		}
		return nil, &agentWait{pending: res.Pending}
	}
	return appendWorkflowResults(s.Agent.Tools, sess.Turns, res.Answer), nil
}

// agentJournal commits an agent step's turns and calls through the run's
// journal, each at once. As the loop's Blobs it keeps an observation too
// large for the transcript whole (up to the step's max_output_bytes): in
// the call record of its call (Output, the whole observation), committed
// with the call's outcome.
type agentJournal struct {
	r       *run
	step    *flow.Step
	attempt int

	mu   sync.Mutex
	kept map[string][]byte // by reference, until the call commits
	// subSeen is the status each sub-run call was last recorded with
	// (subCalls); the loop commits one call at a time.
	subSeen map[string]store.CallStatus
}

// PutBlob keeps data for the call about to commit; its reference is
// "sha256:<hex>".
func (a *agentJournal) PutBlob(_ context.Context, data []byte) (string, error) {
	if int64(len(data)) > a.step.MaxOutputBytes {
		return "", fmt.Errorf("%d bytes is more than max_output_bytes %d", len(data), a.step.MaxOutputBytes)
	}
	ref := "sha256:" + value.Digest(data)
	a.mu.Lock()
	if a.kept == nil {
		a.kept = map[string][]byte{}
	}
	a.kept[ref] = data
	a.mu.Unlock()
	return ref, nil
}

func (a *agentJournal) CommitTurn(_ context.Context, t *agent.Turn) error {
	rec, err := turnRecordOf(a.step.ID, a.attempt, t)
	if err != nil {
		return err
	}
	a.r.record(trace.Event{Kind: trace.AgentTurn, StepID: a.step.ID, StepType: string(flow.Agent), Attempt: a.attempt,
		Turn: t.N, TokensIn: t.Usage.In, TokensOut: t.Usage.Out, Preview: value.Preview([]byte(t.Text), trace.PreviewBytes), AgentTurn: rec})
	return a.commit()
}

func (a *agentJournal) CommitCall(_ context.Context, turn int, c *agent.Call) error {
	ag, err := agentRecordOf(c)
	if err != nil {
		return err
	}
	// the call's one record: what the pipeline saw of it (its gate,
	// effect, outcome and timing) when it reached the pipeline, the whole
	// observation when it was cut, and the loop's part (Agent).
	cl := a.r.takeAgentCall(c.Key)
	if cl == nil {
		cl = &store.Call{StepID: a.step.ID, Key: c.Key, Item: -1, Turn: turn, Index: c.Index, Attempt: a.attempt,
			Kind: store.CallTool, Name: c.Tool, ArgsSHA: c.ArgsSHA}
		if c.Status == agent.StatusChosen {
			// dispatched, or about to be: the durable start of the call.
			cl.StartedAt = a.r.e.cfg.Clock.Now()
		}
	}
	if cl.ArgsSHA == "" {
		cl.ArgsSHA = c.ArgsSHA
	}
	cl.Status, cl.Agent = agentStatus(c.Status), ag
	if c.Status == agent.StatusOK && c.Reason == agent.Reconciled {
		cl.Reconciled = journal.ReconciledHappened
	}
	if c.Reconciled != "" {
		// found in doubt after a crash and asked of its tool's check
		// (invoke.Resolve): what it found, shown by rein runs show. A call
		// the check says did not take effect failed; an approved one is
		// dispatched again under its key, in a record of its own.
		cl.Reconciled = c.Reconciled
		if c.Reconciled == journal.ReconciledNotHappened {
			cl.Status, cl.Error = store.CallFailed, "its tool's check found that the call did not take effect"
		}
	}
	if c.Blob != "" {
		a.mu.Lock()
		whole := a.kept[c.Blob]
		delete(a.kept, c.Blob)
		a.mu.Unlock()
		if whole != nil && a.r.d.on {
			cl.Output = whole
		}
	}
	a.r.recordCallEvent(cl, false)
	if c.Sub != nil {
		a.subCalls(c.Sub)
	}
	return a.commit()
}

// subCalls records the calls of a sub-agent's sub-run (and of the
// sub-runs inside it) as call records of their own, each time one changes
// status: dispatched (started, before it runs), settled or waiting, with
// what the pipeline saw of it (its gate, effect and timing). The loop's
// part of them stays in the sub-run of the calling call's record, which is
// what a resume folds; these records are the effect ledger's (rein runs
// effects, remediation), as any call's.
func (a *agentJournal) subCalls(sr *agent.SubRun) {
	for ti := range sr.Turns {
		t := &sr.Turns[ti]
		for ci := range t.Calls {
			sc := &t.Calls[ci]
			if sc.Sub != nil {
				a.subCalls(sc.Sub)
			}
			st := agentStatus(sc.Status)
			if sc.Status == agent.StatusInvalid || a.subSeen[sc.Key] == st {
				continue
			}
			cl := a.r.takeAgentCall(sc.Key)
			if cl == nil {
				_, started := a.subSeen[sc.Key]
				if !started && (sc.Status != agent.StatusChosen || len(sc.Consumed) == 0) {
					continue // the pipeline saw nothing worth a record; the sub-run keeps the call
				}
				// dispatched, or about to be: the durable start of the call;
				// or the outcome of one whose start is recorded.
				cl = &store.Call{StepID: a.step.ID, Key: sc.Key, Item: -1, Turn: t.N, Index: sc.Index, Attempt: a.attempt,
					Kind: store.CallTool, Name: sc.Tool, ArgsSHA: sc.ArgsSHA}
				if sc.Status == agent.StatusChosen {
					cl.StartedAt = a.r.e.cfg.Clock.Now()
				}
			}
			if a.subSeen == nil {
				a.subSeen = map[string]store.CallStatus{}
			}
			a.subSeen[sc.Key] = st
			cl.Status, cl.Agent = st, nil
			a.r.recordCallEvent(cl, false)
		}
	}
}

// PlanEvent records what an execute_plan call's executor does as the plan
// events of a plan step (plan_step_started, plan_step_waiting,
// plan_step_settled, plan_rejected), with the turn of the call; the plan
// step is named call<c>/<plan-step> (call<c> for the plan as a whole).
func (a *agentJournal) PlanEvent(turn, call int, ev plan.Event) {
	ps := "call" + strconv.Itoa(call)
	if ev.PlanStep != "" {
		ps += "/" + ev.PlanStep
	}
	e := trace.Event{Kind: trace.Kind(ev.Kind), StepID: a.step.ID, StepType: string(flow.Agent), Attempt: a.attempt, Turn: turn,
		PlanStep: ps, Tool: ev.Tool, Status: ev.Status, DurationMS: trace.Millis(ev.Duration),
		ErrorClass: string(ev.ErrorClass), Error: ev.Error}
	if ev.ErrorClass != "" {
		e.Origin = trace.OriginTool
		if ev.Kind == plan.PlanRejected {
			e.Origin = trace.OriginModel
		}
	}
	a.r.record(e)
}

// PlanRun records the start (plan_started, status running) or the end
// (plan_finished: succeeded, failed or waiting) of an execute_plan call's
// sub-run: the plan step is named call<c>, Preview is the objective and
// Data the sub-run record (agent.PlanRun) as JSON.
func (a *agentJournal) PlanRun(turn, call int, run *agent.PlanRun) {
	kind := trace.Kind(plan.PlanFinished)
	if run.Status == agent.PlanActive {
		kind = trace.Kind(plan.PlanStarted)
	}
	data, err := json.Marshal(run)
	if err != nil {
		data = nil
	}
	e := trace.Event{Kind: kind, StepID: a.step.ID, StepType: string(flow.Agent), Attempt: a.attempt, Turn: turn,
		PlanStep: "call" + strconv.Itoa(call), Status: string(run.Status), Preview: value.Preview([]byte(run.Objective), trace.PreviewBytes),
		Data: string(data)}
	if run.Status == agent.PlanFailed {
		e.ErrorClass, e.Error, e.Origin = run.ErrorType, run.Error, trace.OriginTool
	}
	a.r.record(e)
}

func (a *agentJournal) commit() error {
	a.r.flush()
	if a.r.d.on {
		a.r.recordMu.Lock()
		err := a.r.storeErr
		a.r.recordMu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// AgentTranscript reads the transcript of agent step stepID of a run from
// its journal: the turns of the given attempt (0: the last one journaled),
// each call as it stands (arguments, status, observation). A step that
// journaled no turn has none (nil). Errors: the store's, or a record that
// does not decode.
func AgentTranscript(ctx context.Context, st store.Store, runID, stepID string, attempt int) ([]agent.Turn, error) {
	fold, err := foldAgent(ctx, st, runID, stepID, attempt)
	if err != nil {
		return nil, err
	}
	return fold.turns, nil
}

// foldAgent reads the journal of agent step stepID of a run for attempt
// (0: the last one journaled): its transcript and the approvals asked for
// its calls.
func foldAgent(ctx context.Context, st store.Store, runID, stepID string, attempt int) (*transcriptFold, error) {
	fold := &transcriptFold{attempt: attempt}
	var after int64
	for {
		evs, err := st.Events(ctx, runID, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("read the journal of run %s: %w", runID, err)
		}
		for _, ev := range evs {
			after = ev.Seq
			if err := fold.add(ev, stepID); err != nil {
				return nil, err
			}
		}
		if len(evs) < 1000 {
			return fold, nil
		}
	}
}

// FoldAgentTranscript is AgentTranscript over events already read.
func FoldAgentTranscript(events []*trace.Event, stepID string, attempt int) ([]agent.Turn, error) {
	fold, err := foldAgentEvents(events, stepID, attempt)
	if err != nil {
		return nil, err
	}
	return fold.turns, nil
}

// foldAgentEvents folds events already read into the transcript of
// attempt of step stepID and the approvals asked for its calls.
func foldAgentEvents(events []*trace.Event, stepID string, attempt int) (*transcriptFold, error) {
	fold := &transcriptFold{attempt: attempt}
	for _, ev := range events {
		if err := fold.add(ev, stepID); err != nil {
			return nil, err
		}
	}
	return fold, nil
}

// transcriptFold rebuilds turns from agent_turn events (turnOf) and the agent's
// call records (call events with an Agent part; agent_call events in
// journals written before them), and which approvals were asked for the calls of the attempt it folds
// (approval_requested events).
type transcriptFold struct {
	attempt, at int
	turns       []agent.Turn
	// asked are the ids of the approvals asked for the attempt's calls,
	// by approval step id; legacy the step ids whose approval_requested
	// event names no id (journaled before approvals were bound).
	asked  map[string]map[string]bool
	legacy map[string]bool
}

func (f *transcriptFold) add(ev *trace.Event, stepID string) error {
	if ev.Kind == trace.ApprovalRequested && strings.HasPrefix(ev.StepID, stepID+"/") {
		f.ask(ev)
		return nil
	}
	if ev.StepID != stepID || (ev.Kind != trace.AgentTurn && ev.Kind != trace.AgentCall &&
		(ev.Kind != trace.CallRecorded || ev.Call == nil || ev.Call.Agent == nil)) {
		return nil
	}
	if f.attempt == 0 && ev.Attempt != f.at {
		f.turns, f.at = nil, ev.Attempt // a later attempt starts afresh
	}
	if f.attempt != 0 && ev.Attempt != f.attempt {
		return nil
	}
	switch ev.Kind {
	case trace.AgentTurn:
		t, err := turnOf(ev)
		if err != nil || t.N != len(f.turns)+1 {
			return fmt.Errorf("run %s: agent_turn event %d of step %s does not decode as turn %d: %v", ev.RunID, ev.Seq, stepID, len(f.turns)+1, err) //nolint:errorlint // err may be nil: the turn number alone can be wrong
		}
		f.turns = append(f.turns, t)
	default: // an agent's call: its call record, or an agent_call event
		c, turn, _, err := AgentCallOf(ev)
		if err != nil {
			return err
		}
		if turn < 1 || turn > len(f.turns) || c.Index < 1 || c.Index > len(f.turns[turn-1].Calls) {
			return fmt.Errorf("run %s: %s event %d of step %s names call %d of turn %d, which its transcript does not have", ev.RunID, ev.Kind, ev.Seq, stepID, c.Index, turn)
		}
		f.turns[turn-1].Calls[c.Index-1] = c
	}
	return nil
}

// ask keeps the approval an approval_requested event of the attempt
// asked for (the others are another attempt's).
func (f *transcriptFold) ask(ev *trace.Event) {
	if f.attempt != 0 && ev.Attempt != f.attempt {
		return
	}
	var b struct {
		Approval string `json:"approval"`
	}
	if ev.Data == "" || json.Unmarshal([]byte(ev.Data), &b) != nil || b.Approval == "" {
		if f.legacy == nil {
			f.legacy = map[string]bool{}
		}
		f.legacy[ev.StepID] = true
		return
	}
	if f.asked == nil {
		f.asked = map[string]map[string]bool{}
	}
	if f.asked[ev.StepID] == nil {
		f.asked[ev.StepID] = map[string]bool{}
	}
	f.asked[ev.StepID][b.Approval] = true
}

// askedHere reports whether approval a was asked for a call of the
// attempt folded: an approval of another attempt's call of the same name
// decides nothing here.
func (f *transcriptFold) askedHere(a *store.Approval) bool {
	return f.asked[a.StepID][a.ID] || f.legacy[a.StepID]
}

// restoreSession rebuilds the transcript of attempt of step s from the
// journal, and the people's decisions on its calls from the approvals.
func (r *run) restoreSession(ctx context.Context, s *flow.Step, attempt int, sess *agent.Session) error {
	var fold *transcriptFold
	var err error
	if len(r.d.open) > 0 {
		// the transcript as the live run had it: its sealed payloads opened.
		var evs []*trace.Event
		if evs, err = r.e.cfg.Store.Events(ctx, r.id, 0, 0); err != nil {
			return fmt.Errorf("engine: read the journal of run %s: %w", r.id, err)
		}
		r.d.open.events(evs)
		fold, err = foldAgentEvents(evs, s.ID, attempt)
	} else {
		fold, err = foldAgent(ctx, r.e.cfg.Store, r.id, s.ID, attempt)
	}
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	sess.Turns = fold.turns
	approvals, err := r.e.cfg.Store.Approvals(ctx, &store.ListApprovalsParams{RunID: r.id})
	if err != nil {
		return fmt.Errorf("engine: read the approvals of agent step %s: %w", s.ID, err)
	}
	prefix := s.ID + "/"
	for _, a := range approvals {
		ref, ok := strings.CutPrefix(a.StepID, prefix)
		if !ok || a.Status == store.ApprovalPending || !fold.askedHere(a) {
			continue
		}
		// the decision carries its approval's id (used once: agent.Call's
		// Consumed) and the args the person decided on (bound by digest).
		d := agent.Decision{Verdict: agent.Approve, Comment: a.Comment, ID: a.ID}
		if len(a.Args) > 0 {
			d.Args = string(a.Args)
		}
		switch a.Status {
		case store.ApprovalRejected:
			d.Verdict = agent.Reject
		case store.ApprovalSettled:
			d.Verdict = agent.Settle
			if err := json.Unmarshal(a.Output, &d.Output); err != nil {
				return fmt.Errorf("engine: the output settling %s is not JSON: %w", a.StepID, err)
			}
		}
		if sess.Decisions == nil {
			sess.Decisions = map[string]agent.Decision{}
		}
		sess.Decisions[ref] = d
	}
	return nil
}

// parkAgent makes agent step i (or plan step i) wait for people: one
// approval per pending call (plan step), committed with the step's
// waiting row.
func (r *run) parkAgent(i int, w *agentWait) {
	s := r.f.Steps[i]
	st := &r.steps[i]
	for _, p := range w.pending {
		a := &store.Approval{ID: uuid.Must(uuid.NewV7()).String(), RunID: r.id, StepID: s.ID + "/" + p.Ref, Kind: store.KindApproval,
			Status: store.ApprovalPending, Tool: p.Tool, Args: argsJSON(p.Args), CreatedAt: r.e.cfg.Clock.Now(),
			Message: fmt.Sprintf("agent step %s wants to call tool %s (%s): approve to run it once with exactly these arguments%s, or reject it with a comment the agent will read", s.ID, p.Tool, p.Reason, digestNote(p.ArgsSHA))}
		if s.Type == flow.Plan {
			a.Message = fmt.Sprintf("plan step %s: its plan step %s wants to call tool %s (%s): approve to run it once with exactly these arguments%s, or reject it (the plan step fails with your comment)", s.ID, p.Ref, p.Tool, p.Reason, digestNote(p.ArgsSHA))
		}
		if p.Guardrail != "" {
			a.Tool, a.Args = "", nil // no call waits: the guardrail's trip does
			// why it tripped, in the guardrail's words (a judge's are the
			// model's): bounded, secrets hidden.
			p.Reason = value.Preview([]byte(r.e.cfg.Redactor.String(p.Reason)), maxGuardReason)
			a.Message = fmt.Sprintf("agent step %s: %s; approve to go on as if it had not tripped, or reject it (the step fails with a guardrail error and your comment)", s.ID, p.Reason)
			if s.Type == flow.LLM {
				a.Message = llmGuardMessage(s, &p)
			}
			if p.Trip != nil {
				r.recordGuardTrip(s, st.attempts, p.Turn, p.Trip.Name, p.Trip.Side, p.Trip.Reason, journal.GuardrailAsked)
			}
		}
		if p.Kind == "unknown" {
			a.Kind = store.KindUnknown
			a.Message = fmt.Sprintf("agent step %s: %s; approve to run it again, once%s, reject to tell the agent it did not happen as asked, or settle it with the output it produced", s.ID, p.Reason, digestNote(p.ArgsSHA))
		}
		r.m.ParkCall(i, a.StepID, a.Kind, st.attempts)
		r.d.parked = append(r.d.parked, a)
		r.recordMu.Lock()
		r.d.pendAppr = append(r.d.pendAppr, a)
		r.recordMu.Unlock()
		r.record(trace.Event{Kind: trace.ApprovalRequested, StepID: a.StepID, StepType: string(s.Type), Status: string(trace.StepWaiting),
			Tool: p.Tool, Decision: string(a.Kind), Attempt: st.attempts, Turn: p.Turn, Data: approvalBinding(a.ID, p)})
	}
	if len(w.pending) == 0 {
		r.m.Park(i, store.KindApproval, st.attempts)
	}
	r.setStatus(i, r.m.Status(i))
	r.stageStep(i)
}

// digestNote names an approval's args digest in its message ("" when
// unknown).
func digestNote(sha string) string {
	if sha == "" {
		return ""
	}
	return " (args sha256 " + sha + ")"
}

// approvalBinding is the Data of an agent call's approval_requested
// event: the approval's id and the call it is bound to (tool, args
// digest, and the rule that asked), as JSON.
func approvalBinding(id string, p agent.Pending) string {
	b, err := json.Marshal(struct {
		Approval string `json:"approval"`
		Ref      string `json:"ref"`
		Tool     string `json:"tool"`
		ArgsSHA  string `json:"args_sha256,omitempty"`
		Rule     string `json:"rule,omitempty"`
	}{id, p.Ref, p.Tool, p.ArgsSHA, p.Rule})
	if err != nil {
		return ""
	}
	return string(b)
}

// argsJSON is a call's arguments as the approval keeps them: the JSON the
// model wrote, or that text as a JSON string when it is not JSON.
func argsJSON(raw string) json.RawMessage {
	if json.Valid([]byte(raw)) {
		return json.RawMessage(raw)
	}
	b, _ := json.Marshal(raw)
	return b
}

// restoreAgent applies the approvals of an agent step's calls (or of a
// plan step's plan steps) on resume: while any of them waits, the step
// waits; once all are decided it runs again at its attempt, and the loop
// (the plan) applies the decisions. It returns the latest approval of
// each, by step id "<step>/<ref>", when the step runs again; nil when it
// waits.
func (r *run) restoreAgent(i int, row *store.Step, approvals []*store.Approval) map[string]*store.Approval {
	s := r.f.Steps[i]
	latest := map[string]*store.Approval{}
	prefix := s.ID + "/"
	for _, a := range approvals {
		if !strings.HasPrefix(a.StepID, prefix) {
			continue
		}
		if p := latest[a.StepID]; p == nil || !a.CreatedAt.Before(p.CreatedAt) {
			latest[a.StepID] = a
		}
	}
	var waiting []*store.Approval
	for _, a := range latest {
		if a.Status == store.ApprovalPending {
			waiting = append(waiting, a)
		}
	}
	// in the order the calls were asked, whatever the map's order.
	slices.SortFunc(waiting, func(a, b *store.Approval) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.StepID, b.StepID)
	})
	for _, a := range waiting {
		r.m.ParkCall(i, a.StepID, a.Kind, row.Attempt)
		r.d.parked = append(r.d.parked, a)
	}
	if len(waiting) > 0 {
		r.setStatus(i, r.m.Status(i))
		return nil
	}
	r.d.firstAttempt[i] = max(row.Attempt, 1)
	return latest
}

// inputHistory is an agent step's Session.History: the run input's
// "history" field, a list of {role: user|assistant|tool, content} items
// (the earlier exchanges of a chat session, as package session records
// them on each run, so a run resumed in another process sees the same
// conversation): an assistant item may carry tool_calls [{id, tool, args}],
// a tool item answers one (tool_call_id, tool, is_error). Entries of
// another shape are left out; agent folders' input schema (rein.LoadAgent)
// rejects them before the run starts. A tool call keeps the tool's own
// name here; the loop offers it to the model under its wire name.
func inputHistory(input any) []model.Message {
	out, _ := historyOf(input)
	return out
}

// inputAgent is an agent step's Session.Agent: the run input's "last_agent"
// field, the agents a chat session's last answer came from after handoffs
// (outermost first), which the conversation continues with. Entries that
// are not strings are left out.
func inputAgent(input any) []string {
	m, ok := input.(map[string]any)
	if !ok {
		return nil
	}
	list, _ := m["last_agent"].([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// historyOf is inputHistory, with the tool each tool item answered for
// ("" for the other items).
func historyOf(input any) (out []model.Message, tools []string) {
	m, ok := input.(map[string]any)
	if !ok {
		return nil, nil
	}
	list, _ := m["history"].([]any)
	for _, e := range list {
		em, _ := e.(map[string]any)
		role, _ := em["role"].(string)
		content, _ := em["content"].(string)
		msg := model.Message{Role: model.Role(role), Content: content}
		switch msg.Role {
		case model.User:
		case model.Assistant:
			calls, _ := em["tool_calls"].([]any)
			for _, c := range calls {
				cm, _ := c.(map[string]any)
				id, _ := cm["id"].(string)
				name, _ := cm["tool"].(string)
				args, _ := cm["args"].(string)
				if name != "" {
					msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: id, Name: name, Args: args})
				}
			}
		case model.Tool:
			msg.ToolCallID, _ = em["tool_call_id"].(string)
			msg.IsError, _ = em["is_error"].(bool)
		default:
			continue
		}
		name, _ := em["tool"].(string)
		if msg.Role != model.Tool {
			name = ""
		}
		out, tools = append(out, msg), append(tools, name)
	}
	return out, tools
}
