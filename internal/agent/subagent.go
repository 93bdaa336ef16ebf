package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// Agents as tools. A Tool whose Agent is set is another agent (a
// sub-agent): the model calls it with {"task": "..."} and the call runs the
// sub-agent's own loop as a sub-run of the calling call (SubRun, kept on the
// Call and journaled with it each time the sub-run commits a turn or a
// call), through the caller's pipeline (its gate, recorder and keys:
// <caller call key>/<tool>/turn<t>/call<c>), so the effect ledger's rules
// hold for its calls as for the caller's. Its answer (its output_schema'd
// value) is the call's observation; a sub-run that fails (its budget, its
// model) answers the error as the observation, and the caller goes on.
//
// Budgets: the sub-run's usage counts into the caller's (UsageOf), and its
// own budgets are cut to what the caller has left when it starts. Approvals:
// a sub-run call that waits for a person makes the calling call wait
// (StatusWaiting, one Pending per waiting sub-run call, Ref
// turn<t>/call<c>/turn<t'>/call<c'>), so the whole run parks; once every one
// is decided the calling call runs again and the sub-run continues with the
// decisions. A sub-agent call is safe to repeat: a crash while it runs
// continues the sub-run from its committed turns, whose own calls follow
// the ledger (a call in doubt is unknown for a person). Recursion: an agent
// cannot call itself, directly or through others (ErrorType "recursion"),
// and sub-runs nest at most MaxAgentDepth deep.

// MaxAgentDepth bounds how deep agents called as tools nest.
const MaxAgentDepth = 4

// Definition is an agent offered to other agents as a tool. Config holds
// its model, instructions, tools, output schema, budgets and limits; the
// rest (pipeline, recorder, journal, keys, clock) is the caller's.
type Definition struct {
	// Name is the agent's own name (its agent.yaml name or folder): the
	// recursion guard compares it, with Path.
	Name string
	// Path identifies the definition (its folder, absolute): an agent
	// reached again through the same Path is a cycle.
	Path        string
	Description string
	Config      Config
	// Gate is the agent's own policy (its folder's rein.yaml policy:),
	// joined with the caller's for its calls: a rule of either holds. Nil:
	// the caller's alone.
	Gate safety.Gate
	// Back marks the agent of a handoff that closes a chain of handoffs
	// (the agent is on it, before the one that hands off): calling it
	// hands the conversation back (handback.go); Config is not used.
	Back bool
}

// Definer is a tool.Tool that is an agent (package project makes one for an
// agent.yaml tools: entry {agent: FOLDER}); AsTool turns it into a Tool
// with Agent set.
type Definer interface {
	tool.Tool
	AgentDefinition() *Definition
}

// AsTool is t as the loop offers it: a sub-agent when t is a Definer.
func AsTool(t tool.Tool, approval bool) Tool {
	out := Tool{Tool: t, Approval: approval}
	if d, ok := t.(Definer); ok {
		out.Agent = d.AgentDefinition()
	}
	return out
}

// SubRun is the sub-run of a call of a sub-agent: its task, its turns as
// committed, what it came to, and the calls of it that wait for a person.
type SubRun struct {
	Agent string `json:"agent"`
	// Handoff marks the sub-run of a handoff: the conversation was
	// transferred to Agent, whose answer is the caller's.
	Handoff bool         `json:"handoff,omitempty"`
	Task    string       `json:"task"`
	Status  SubRunStatus `json:"status"`
	Turns   []Turn       `json:"turns,omitempty"`
	Usage   Usage        `json:"usage"`
	// Pending are its calls that wait for a person (Ref relative to the
	// sub-run: turn<t>/call<c>).
	Pending []Pending `json:"pending,omitempty"`
	Answer  any       `json:"answer,omitempty"`
	// ErrorType and Error say why it failed (a budget, its model).
	ErrorType string `json:"error_type,omitempty"`
	Error     string `json:"error,omitempty"`
	// Back is where a handed-over sub-run sent the conversation back
	// (Status SubHandedBack): to the caller, or to an agent before it.
	Back *HandBack `json:"back,omitempty"`
}

// SubRunStatus is where a sub-run stands.
type SubRunStatus string

// Sub-run statuses.
const (
	SubRunning  SubRunStatus = "running"
	SubAnswered SubRunStatus = "answered"
	SubWaiting  SubRunStatus = "waiting"
	SubFailed   SubRunStatus = "failed"
	// SubRefused: the call was refused before the sub-agent ran (a
	// recursion, too deep, no budget left).
	SubRefused SubRunStatus = "refused"
	// SubHandedBack: the agent the conversation went to handed it back
	// (SubRun.Back names to whom).
	SubHandedBack SubRunStatus = "handed_back"
)

const subInputSchema = `{"type":"object","required":["task"],"additionalProperties":false,
"properties":{"task":{"type":"string","minLength":1,"description":"what you ask the agent to do, with every detail it needs: it sees nothing else of this conversation"}}}`

// subAgent is a sub-agent bound in a Loop: its loop, built once.
type subAgent struct {
	def  *Definition
	loop *Loop
}

// bindSub builds the loop of t's sub-agent, sharing l's pipeline, recorder,
// clock and model retries; it returns the spec the caller offers.
func bindSub(parent Config, t Tool, path []string) (*subAgent, tool.Spec, error) {
	d := t.Agent
	spec := t.Spec()
	if spec.Description == "" {
		spec.Description = d.Description
	}
	if spec.Description == "" {
		spec.Description = "Ask the agent " + d.Name + " to do a task; it answers with its result."
	}
	spec.InputSchema = json.RawMessage(subInputSchema)
	if t.Handoff != "" {
		spec.InputSchema = json.RawMessage(handoffInputSchema)
		spec.Description = "Transfer the conversation to the agent " + d.Name + ": it answers the user from here on (call it alone, as the turn's only call). " + d.Description
	}
	spec.OutputSchema = nil
	// its calls are gated one by one inside the sub-run: the call of the
	// agent itself touches nothing, and is safe to repeat (it continues).
	spec.Effect, spec.Idempotent = tool.EffectNone, true
	id := d.Path
	if id == "" {
		id = d.Name
	}
	for _, p := range path {
		if p == id {
			return nil, spec, fmt.Errorf("agent: tool %s: agent %s calls itself (through %s): an agent cannot call itself, directly or through others", spec.Name, d.Name, strings.Join(append(path, id), " -> "))
		}
	}
	if len(path) >= MaxAgentDepth {
		return nil, spec, fmt.Errorf("agent: tool %s: agents called as tools nest %d deep (%s), more than %d", spec.Name, len(path)+1, strings.Join(append(path, id), " -> "), MaxAgentDepth)
	}
	cfg := d.Config
	cfg.Pipeline, cfg.Recorder, cfg.Now, cfg.Sleep = parent.Pipeline, parent.Recorder, parent.Now, parent.Sleep
	if d.Gate != nil {
		pl := *parent.Pipeline
		pl.Gate = safety.Join(parent.Pipeline.Gate, d.Gate)
		cfg.Pipeline = &pl
	}
	cfg.ModelRetries, cfg.RetryWait, cfg.CallTimeout, cfg.SubModel = parent.ModelRetries, parent.RetryWait, parent.CallTimeout, parent.SubModel
	cfg.Evidence, cfg.Journal, cfg.Blobs = nil, nil, nil
	if cfg.SubModel != nil && cfg.Model != nil {
		cfg.Model = cfg.SubModel(cfg.ModelName, cfg.Model)
	}
	cfg.path = append(append([]string(nil), path...), id)
	sub, err := New(cfg)
	if err != nil {
		return nil, spec, fmt.Errorf("agent: tool %s (agent %s): %w", spec.Name, d.Name, err)
	}
	return &subAgent{def: d, loop: sub}, spec, nil
}

// subChain marks a context with the agents whose sub-runs it is inside.
type subChain struct{}

func chainOf(ctx context.Context) []string {
	c, _ := ctx.Value(subChain{}).([]string)
	return c
}

// runSub runs (or continues) the sub-run of call c of turn: args are
// {task}. It returns the sub-agent's answer, or a *subPaused when calls of
// the sub-run wait for a person. A sub-run that fails answers its error as
// the observation (a *subFailed output), never an error of the caller.
func (l *Loop) runSub(ctx context.Context, turn int, c *Call, bt *boundTool, args map[string]any) (any, error) {
	sa := bt.sub
	task, _ := args["task"].(string)
	var history []model.Message
	var agents []string
	if bt.Handoff != "" {
		task, history, agents = c.handover.task, c.handover.history, c.handover.agents
	}
	id := sa.def.Path
	if id == "" {
		id = sa.def.Name
	}
	chain := chainOf(ctx)
	for _, a := range chain {
		if a == id {
			c.Sub = &SubRun{Agent: sa.def.Name, Task: task, Status: SubRefused, ErrorType: "recursion",
				Error: fmt.Sprintf("agent %s is already running in this chain (%s): an agent cannot call itself, directly or through others", sa.def.Name, strings.Join(chain, " -> "))}
			return subAnswer(c.Sub), nil
		}
	}
	if len(chain) >= MaxAgentDepth {
		c.Sub = &SubRun{Agent: sa.def.Name, Task: task, Status: SubRefused, ErrorType: "recursion",
			Error: fmt.Sprintf("agents called as tools nest at most %d deep", MaxAgentDepth)}
		return subAnswer(c.Sub), nil
	}
	ctx = context.WithValue(ctx, subChain{}, append(append([]string(nil), chain...), id))
	sr := &SubRun{Agent: sa.def.Name, Task: task, Handoff: bt.Handoff != ""}
	if c.Sub != nil && c.Sub.Task == task {
		*sr = *c.Sub // continued: a copy, so the record committed before stays as it was
	}
	sr.Status, sr.Pending, sr.ErrorType, sr.Error, sr.Back = SubRunning, nil, "", "", nil
	c.Sub = sr
	budgets, err := sa.loop.cfg.Budgets.cut(c.left)
	if err != nil {
		sr.Status, sr.ErrorType, sr.Error = SubRefused, string(fault.Budget), err.Error()
		return subAnswer(sr), nil
	}
	sess := &Session{Task: task, History: history, Turns: sr.Turns, Decisions: c.subDecisions, Agent: agents}
	sj := &subJournal{parent: l, turn: turn, call: c, turns: cloneTurns(sr.Turns)}
	sub := sa.loop.nested(l, c.Key+"/"+bt.spec.Name, sj, budgets, bt.Handoff == "")
	res, err := sub.Run(ctx, sess)
	latest := *c.Sub // the journal's latest, copied: what it committed stays
	sr = &latest
	c.Sub = sr
	sr.Turns = sj.turns
	sr.Usage = UsageOf(&Session{Turns: sr.Turns})
	if ctx.Err() != nil {
		return nil, context.Cause(ctx) // cancelled: the call stays chosen
	}
	switch {
	case err != nil:
		var je *journalError
		if asJournalError(err, &je) {
			return nil, je.err // the caller's journal failed: the run stops
		}
		sr.Status, sr.ErrorType, sr.Error = SubFailed, string(fault.ClassOf(err)), err.Error()
		if b := fault.BudgetOf(err); b != "" {
			sr.ErrorType = "budget:" + b
		}
		if me := (*ModelError)(nil); errors.As(err, &me) && fault.ClassOf(err) == fault.Budget {
			// the run's budget (max_llm_calls, max_tokens, a tenant's
			// tokens_per_day or cost_per_day) refused the sub-agent's model
			// call: it is the caller's too, which stops.
			return nil, &callerStop{err: err}
		}
		return subAnswer(sr), nil
	case res.Status == StatusPaused:
		sr.Status, sr.Pending = SubWaiting, res.Pending
		return nil, &subPaused{n: len(res.Pending), agent: sa.def.Name}
	case res.Status == StatusHandedBack:
		return handedBack(sr, sa.def.Name, res), nil
	}
	sr.Status, sr.Answer = SubAnswered, res.Answer
	return res.Answer, nil
}

// subAnswer is the observation of a sub-run that did not answer.
func subAnswer(sr *SubRun) any {
	return map[string]any{"agent": sr.Agent, "error_type": sr.ErrorType, "error": sr.Error}
}

// cut returns b bounded by left, what the caller has left (nil: no bound);
// an error when left has nothing more for a turn.
func (b Budgets) cut(left *Budgets) (Budgets, error) {
	if left == nil {
		return b, nil
	}
	if left.MaxTurns < 1 {
		return b, fault.BudgetErr("max_turns", "agent: the caller's turn budget is spent: the sub-agent gets no turn")
	}
	if left.MaxToolCalls < 0 {
		left.MaxToolCalls = 0
	}
	b.MaxTurns = min(b.MaxTurns, left.MaxTurns)
	b.MaxToolCalls = min(b.MaxToolCalls, left.MaxToolCalls)
	b.MaxHandoffs = max(min(b.MaxHandoffs, left.MaxHandoffs), 0)
	if left.MaxTokens > 0 {
		if b.MaxTokens == 0 || left.MaxTokens < b.MaxTokens {
			b.MaxTokens = left.MaxTokens
		}
	}
	return b, nil
}

// left is what s leaves of l's budgets (the sub-runs of its calls counted).
func (l *Loop) left(s *Session) *Budgets {
	u := UsageOf(s)
	b := l.cfg.Budgets
	out := &Budgets{MaxTurns: b.MaxTurns - u.Turns, MaxToolCalls: b.MaxToolCalls - u.ToolCalls, MaxHandoffs: b.MaxHandoffs - u.Handoffs}
	if b.MaxTokens > 0 {
		out.MaxTokens = max(b.MaxTokens-u.TokensIn-u.TokensOut, 1)
	}
	return out
}

// nested is sa's loop placed in the caller's run: its keys extend parent
// (the calling call's key and the tool's name), j commits it, its budgets
// are b; aside: it answers its caller, not the conversation (an agent
// called as a tool).
func (l *Loop) nested(caller *Loop, parent string, j Journal, b Budgets, aside bool) *Loop {
	c := *l
	c.cfg.aside = caller.cfg.aside || aside
	c.cfg.RunID, c.cfg.StepID, c.cfg.Attempt = caller.cfg.RunID, caller.cfg.StepID, caller.cfg.Attempt
	// its cut observations keep their preview only: the caller's Blobs
	// keep a blob for the call that commits next, which is the caller's.
	c.cfg.Journal, c.cfg.Blobs, c.cfg.Recorder, c.cfg.parent = j, nil, caller.cfg.Recorder, parent
	c.cfg.Budgets = b
	return &c
}

// subPaused is a sub-agent call's error when calls of its sub-run wait
// for a person: the loop makes the call wait.
type subPaused struct {
	n     int
	agent string
}

func (e *subPaused) Error() string {
	return fmt.Sprintf("agent %s waits: %d of its call(s) need a person", e.agent, e.n)
}

// subJournal commits a sub-run: each of its turns and calls becomes the
// calling call's SubRun, committed through the caller's journal with the
// call still chosen (a crash continues the sub-run from there).
type subJournal struct {
	parent *Loop
	turn   int
	call   *Call
	turns  []Turn
}

func (j *subJournal) CommitTurn(ctx context.Context, t *Turn) error {
	tc := *t
	tc.Calls = append([]Call(nil), t.Calls...)
	j.turns = append(j.turns[:len(j.turns):len(j.turns)], tc)
	return j.commit(ctx)
}

func (j *subJournal) CommitCall(ctx context.Context, turn int, c *Call) error {
	if turn < 1 || turn > len(j.turns) || c.Index < 1 || c.Index > len(j.turns[turn-1].Calls) {
		return fmt.Errorf("agent %s: call %s is not in its sub-run", j.call.Tool, Ref(turn, c.Index))
	}
	turns := append([]Turn(nil), j.turns...)
	t := turns[turn-1]
	t.Calls = append([]Call(nil), t.Calls...)
	t.Calls[c.Index-1] = *c
	turns[turn-1] = t
	j.turns = turns
	return j.commit(ctx)
}

func (j *subJournal) commit(ctx context.Context) error {
	c := j.call
	sr := *c.Sub // a new record each commit: one committed before stays as it was
	sr.Turns = j.turns
	sr.Usage = UsageOf(&Session{Turns: j.turns})
	c.Sub = &sr
	c.Status, c.Observation = StatusChosen, ""
	if err := j.parent.commitCall(ctx, j.turn, c); err != nil {
		return &journalError{err: err}
	}
	return nil
}

// journalError is the caller's journal failing under a sub-run: it stops
// the caller too.
type journalError struct{ err error }

func (e *journalError) Error() string { return e.err.Error() }
func (e *journalError) Unwrap() error { return e.err }

func asJournalError(err error, target **journalError) bool {
	for err != nil {
		if je, ok := err.(*journalError); ok { //nolint:errorlint // walks the chain itself
			*target = je
			return true
		}
		u, ok := err.(interface{ Unwrap() error }) //nolint:errorlint // walks the chain itself
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func cloneTurns(ts []Turn) []Turn {
	return append([]Turn(nil), ts...)
}

// lockedJournal serialises a Journal whose commits come from sub-runs
// running on the calls' goroutines as well as from the loop's.
type lockedJournal struct {
	mu sync.Mutex
	j  Journal
}

func (l *lockedJournal) CommitTurn(ctx context.Context, t *Turn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.j.CommitTurn(ctx, t)
}

func (l *lockedJournal) CommitCall(ctx context.Context, turn int, c *Call) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.j.CommitCall(ctx, turn, c)
}

// subPending are the decisions c's sub-run waits for, named from the
// caller: turn<t>/call<c>/<the sub-run's ref>.
func (c *Call) subPending(turn int) []Pending {
	ps := make([]Pending, 0, len(c.Sub.Pending))
	for _, p := range c.Sub.Pending {
		q := p
		q.Ref = Ref(turn, c.Index) + "/" + p.Ref
		q.Turn, q.Call = turn, c.Index
		q.Reason = fmt.Sprintf("agent %s (called by %s): %s", c.Sub.Agent, Ref(turn, c.Index), p.Reason)
		ps = append(ps, q)
	}
	return ps
}

// subDecisionsOf are the decisions of s on c's sub-run, by the sub-run's
// refs; undecided lists the pending entries of c with none.
func subDecisionsOf(s *Session, turn int, c *Call) (map[string]Decision, []Pending) {
	prefix := Ref(turn, c.Index) + "/"
	var out map[string]Decision
	for ref, d := range s.Decisions {
		if rest, ok := strings.CutPrefix(ref, prefix); ok {
			if out == nil {
				out = map[string]Decision{}
			}
			out[rest] = d
		}
	}
	var undecided []Pending
	if c.Sub != nil && c.Status == StatusWaiting {
		for _, p := range c.subPending(turn) {
			if _, ok := out[strings.TrimPrefix(p.Ref, prefix)]; !ok {
				undecided = append(undecided, p)
			}
		}
	}
	return out, undecided
}

// SubSpec returns the spec of the tool named name of one of l's
// sub-agents (searched depth first, in tool order): what a call of a
// sub-run touches, for the records of its calls. ok is false when no
// sub-agent has such a tool.
func (l *Loop) SubSpec(name string) (tool.Spec, bool) {
	if !l.subs {
		return tool.Spec{}, false
	}
	for _, t := range l.cfg.Tools {
		bt := l.tools[t.Spec().Name]
		if bt == nil || bt.sub == nil {
			continue
		}
		if st, ok := bt.sub.loop.tools[name]; ok && st.sub == nil {
			return st.spec, true
		}
		if sp, ok := bt.sub.loop.SubSpec(name); ok {
			return sp, true
		}
	}
	return tool.Spec{}, false
}

// callerStop is a sub-agent call's error that stops the caller's loop
// too (the run's budget refused the sub-agent's model call): the call
// fails, is committed, and the turn ends with err.
type callerStop struct{ err error }

func (e *callerStop) Error() string { return e.err.Error() }
func (e *callerStop) Unwrap() error { return e.err }
