package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/value/schema"
)

// Tool is a tool the agent may call.
type Tool struct {
	tool.Tool
	// Approval requires a person's approval of every call before it runs
	// (approval: required in rein.yaml or agent.yaml).
	Approval bool
	// Agent, when set, makes the tool another agent (a sub-agent, see
	// subagent.go): its calls run that agent's loop as a sub-run. AsTool
	// sets it for a Definer.
	Agent *Definition
	// Handoff, with Agent, makes the tool a handoff (see handoff.go): the
	// conversation is transferred to the agent, which sees the history
	// this names (flow.HistoryAll, HistoryNoTools, HistoryLastUser) and
	// whose answer is the loop's.
	Handoff string
}

// Budgets bound a run of the loop. Each is its own counter and its own
// error (fault.Budget, named by fault.BudgetOf): "max_turns",
// "max_tool_calls", "max_tokens", "timeout".
type Budgets struct {
	// MaxTurns bounds the model's turns. Defaults to 20.
	MaxTurns int
	// MaxToolCalls bounds the tool calls over all turns; a turn asking for
	// more than remain runs none of them. Defaults to 50.
	MaxToolCalls int
	// MaxTokens bounds input plus output tokens over all turns; 0 means
	// no bound.
	MaxTokens int
	// MaxHandoffs bounds the transfers of the conversation (handoffs and
	// hand-backs, handback.go) over all turns, those of the agents it
	// goes to counted. Defaults to DefaultMaxHandoffs (in New; a sub-run's
	// cut budgets may leave 0: no transfer).
	MaxHandoffs int
	// Timeout bounds the wall time from Session.Started (set by Run when
	// zero; the engine starts it afresh each time an agent step runs, so
	// waiting for a person does not count); 0 means none.
	Timeout time.Duration
}

// Defaults of Budgets and Config.
const (
	DefaultMaxTurns         = 20
	DefaultMaxToolCalls     = 50
	DefaultObservationLimit = 4 << 10
	DefaultMaxArgsBytes     = 1 << 20
	DefaultConcurrency      = 8
	DefaultCallTimeout      = 5 * time.Minute
)

// Journal commits the loop's progress. CommitTurn records a turn as the
// model gave it (calls that failed the loop's own checks already settled,
// the others StatusChosen) before any of its calls runs; CommitCall
// records one call's outcome. The loop calls them one at a time, never
// concurrently. An error stops the loop: nothing after an uncommitted turn
// runs.
type Journal interface {
	CommitTurn(ctx context.Context, t *Turn) error
	CommitCall(ctx context.Context, turn int, c *Call) error
}

// Blobs stores observations too large for the transcript.
type Blobs interface {
	// PutBlob stores data and returns its reference (e.g. "sha256:…").
	PutBlob(ctx context.Context, data []byte) (string, error)
}

// Config configures a Loop. Model and Tools are required.
type Config struct {
	Model model.Model
	// ModelName is the model named in each request.
	ModelName string
	// Instructions are the system message of every turn.
	Instructions string
	Tools        []Tool
	// Pipeline passes every call (gate, key, deadline, records). Defaults
	// to a Pipeline with no gate.
	Pipeline *invoke.Pipeline
	// Recorder receives the pipeline's gate decisions and call records.
	Recorder invoke.Recorder
	// Output, when set, is the schema the final answer must satisfy: the
	// answer is parsed as JSON and validated, with one corrective request
	// on failure, then a format error.
	Output  *schema.Schema
	Budgets Budgets
	// ObservationLimit is the largest observation, in bytes, the
	// transcript keeps whole (see the package documentation). Defaults to
	// DefaultObservationLimit.
	ObservationLimit int
	// MaxArgsBytes bounds a call's arguments as the model wrote them: a
	// call whose arguments are longer is refused before they are parsed,
	// as an invalid call the model sees (and may send again, smaller), and
	// neither the transcript nor the journal keeps more than a preview of
	// them. Defaults to DefaultMaxArgsBytes.
	MaxArgsBytes int
	// Blobs keeps observations above ObservationLimit whole. Nil: only
	// the preview is kept.
	Blobs Blobs
	// Journal commits turns and calls. Nil: nothing is committed (the
	// Session still holds every turn).
	Journal Journal
	// RunID, StepID and Attempt place the loop in a run: every call's key
	// is run/step/attempt/turn<t>/call<c>, and requests carry them.
	RunID, StepID string
	Attempt       int
	// Concurrency bounds the calls of one turn that run at once. Defaults
	// to DefaultConcurrency.
	Concurrency int
	// Held, when set and true, stops the loop before a further turn or
	// call starts (ErrHeld; hold.go): a failed premise elsewhere pauses
	// the run. Set by WithHeld.
	Held func() bool
	// CallTimeout bounds each tool call. Defaults to DefaultCallTimeout.
	CallTimeout time.Duration
	// Now is the clock of the wall-time budget. Defaults to time.Now.
	Now func() time.Time
	// ModelRetries is how often a turn's model call is asked again after
	// a transient error (fault.Transient: 429, 5xx, a timeout, a lost
	// connection): the model call is retried, never the turn's tool calls
	// nor the loop. 0: none.
	ModelRetries int
	// RetryWait is the wait before retry n (from 1) of a model call of the
	// run runID that failed with err (the engine: the step's backoff, or
	// the error's Retry-After when longer). Nil: no wait.
	RetryWait func(runID string, n int, err error) time.Duration
	// Sleep waits d, or until ctx ends (returning its cause). Defaults to
	// a timer of the wall clock; the engine gives its Clock's.
	Sleep func(ctx context.Context, d time.Duration) error
	// Evidence is the run's record outside this loop — the run's input as
	// the user's, outputs of tools the run called before — that the
	// model's arguments are traced to and its declarations checked
	// against, besides the session's own messages and observations. Nil:
	// only the session's.
	Evidence *safety.Evidence
	// Guardrails check the task before the first model call and the final
	// answer before it is accepted; the first that trips stops the loop
	// with a fault.Guardrail error (GuardrailError).
	Guardrails []Guardrail
	// Context, when set, is the context budget of every request (see
	// ContextBudget). Nil: requests grow with the conversation, within
	// ObservationLimit per call.
	Context *ContextBudget
	// ExecutePlan, when set, offers the model the execute_plan meta-tool
	// over Tools (see the package documentation). Nil: not offered — leave
	// it nil for a loop that runs inside a plan (PlanRunning).
	ExecutePlan *PlanOptions
	// SubModel, when set, wraps the model of each sub-agent (a Tool with
	// Agent) before its loop uses it: the engine meters it as the
	// caller's.
	SubModel func(name string, m model.Model) model.Model

	// path are the agents this one is a sub-agent of (the recursion
	// guard); parent, when set, is the key of the call whose sub-run this
	// loop runs, which its calls' keys extend.
	path   []string
	parent string
	// aside: this loop is a sub-run of an agent called as a tool (or
	// inside one): its text is not the conversation (model.Request.Aside).
	aside bool
}

// Loop runs agent tasks. Build it with New; it is safe for concurrent
// use by Runs of different Sessions.
type Loop struct {
	cfg   Config
	tools map[string]*boundTool // by the tool's own name
	// wire maps the names the model is offered (model.WireNames: an MCP
	// tool's "crm.find" is "crm__find") to the tools' own names.
	wire map[string]string
	defs []model.ToolDef
	// planner runs execute_plan calls; nil when it is not offered.
	planner *planner
	// subs: some tool is a sub-agent (its sub-runs commit from the calls'
	// goroutines: Run serialises the journal).
	subs bool
	// unit, when set, bounds Run to one unit (Step).
	unit *Unit
}

type boundTool struct {
	Tool
	spec tool.Spec
	// wire is the name the model calls the tool by (model.WireNames).
	wire          string
	input, output *schema.Schema
	// declares: the model sees the tool's schema with the declaration
	// argument (a side-effecting tool whose schema leaves the name free).
	declares bool
	// sub is the sub-agent of a Tool with Agent set; back, instead, the
	// agent a hand-back goes to (handback.go).
	sub  *subAgent
	back *Definition
}

// New checks cfg and returns a Loop. Errors name the tool at fault: a
// missing model, a tool given twice, an input schema that does not
// compile. A tool whose name providers refuse (an MCP tool's
// "<server>.<tool>") is offered to the model under its model.WireNames
// name and keeps its own everywhere else: in the transcript, the journal,
// approvals and the gate.
func New(cfg Config) (*Loop, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("agent: no model")
	}
	if cfg.Pipeline == nil {
		cfg.Pipeline = &invoke.Pipeline{}
	}
	if cfg.Budgets.MaxTurns <= 0 {
		cfg.Budgets.MaxTurns = DefaultMaxTurns
	}
	if cfg.Budgets.MaxToolCalls <= 0 {
		cfg.Budgets.MaxToolCalls = DefaultMaxToolCalls
	}
	if cfg.Budgets.MaxHandoffs <= 0 {
		cfg.Budgets.MaxHandoffs = DefaultMaxHandoffs
	}
	if cfg.MaxArgsBytes <= 0 {
		cfg.MaxArgsBytes = DefaultMaxArgsBytes
	}
	if cfg.ObservationLimit <= 0 {
		cfg.ObservationLimit = DefaultObservationLimit
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	l := &Loop{cfg: cfg, tools: make(map[string]*boundTool, len(cfg.Tools))}
	for i, t := range cfg.Tools {
		if t.Tool == nil {
			return nil, fmt.Errorf("agent: tools[%d] is nil", i)
		}
		b := &boundTool{Tool: t, spec: t.Spec()}
		switch {
		case isBack(t, cfg.path):
			b.back, b.spec = t.Agent, backSpec(t)
		case t.Agent != nil:
			var err error
			if b.sub, b.spec, err = bindSub(cfg, t, cfg.path); err != nil {
				return nil, err
			}
		}
		if _, dup := l.tools[b.spec.Name]; dup {
			return nil, fmt.Errorf("agent: tools[%d]: tool %q is given twice", i, b.spec.Name)
		}
		var err error
		if b.input, err = compileSchema(b.spec.Name+" input_schema", b.spec.InputSchema); err != nil {
			return nil, fmt.Errorf("agent: tool %s: %w", b.spec.Name, err)
		}
		if b.output, err = compileSchema(b.spec.Name+" output_schema", b.spec.OutputSchema); err != nil {
			return nil, fmt.Errorf("agent: tool %s: %w", b.spec.Name, err)
		}
		l.tools[b.spec.Name] = b
	}
	order := make([]*boundTool, 0, len(l.tools)+1)
	for _, t := range cfg.Tools {
		b := l.tools[t.Spec().Name]
		order = append(order, b)
		if b.sub != nil {
			l.subs = true
		}
	}
	if cfg.ExecutePlan != nil {
		p, bt, err := newPlanner(*cfg.ExecutePlan, l.tools)
		if err != nil {
			return nil, err
		}
		l.planner = p
		l.tools[bt.spec.Name] = bt
		order = append(order, bt)
	}
	l.offer(order)
	if err := model.CheckRequest(&model.Request{Tools: l.defs}); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return l, nil
}

// offer names the tools for the model (model.WireNames) and writes their
// definitions, in order.
func (l *Loop) offer(order []*boundTool) {
	names := make([]string, len(order))
	for i, b := range order {
		names[i] = b.spec.Name
	}
	l.wire = make(map[string]string, len(order))
	l.defs = make([]model.ToolDef, len(order))
	for i, w := range model.WireNames(names) {
		b := order[i]
		b.wire = w
		l.wire[w] = b.spec.Name
		l.defs[i] = model.ToolDef{Name: w, Description: b.spec.Description, Schema: b.spec.InputSchema}
		if sideEffect(&b.spec) {
			l.defs[i].Schema, b.declares = withDeclaration(b.spec.InputSchema)
		}
	}
}

// named returns the tool the model called name: by the name it was
// offered, or by the tool's own name.
func (l *Loop) named(name string) (*boundTool, bool) {
	if own, ok := l.wire[name]; ok {
		return l.tools[own], true
	}
	b, ok := l.tools[name]
	return b, ok
}

// wireName is the name the model knows the tool named name by (name
// itself for a tool the loop does not offer).
func (l *Loop) wireName(name string) string {
	if b, ok := l.tools[name]; ok {
		return b.wire
	}
	return name
}

// sleep waits d on the wall clock, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// ModelError is the loop's error when its model failed (after its
// retries): the error of turn Turn's request to model Model. It unwraps
// to the model's error, classed as the model classed it.
type ModelError struct {
	Turn  int
	Model string
	// Corrective marks the corrective request of a final answer.
	Corrective bool
	Err        error
}

func (e *ModelError) Error() string {
	if e.Corrective {
		return fmt.Sprintf("agent: turn %d: model %s (corrective request): %v", e.Turn, e.Model, e.Err)
	}
	return fmt.Sprintf("agent: turn %d: model %s: %v", e.Turn, e.Model, e.Err)
}

func (e *ModelError) Unwrap() error { return e.Err }

func compileSchema(name string, raw []byte) (*schema.Schema, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return schema.Compile(name, json.RawMessage(raw))
}

// WithEvidence returns a Loop like l whose Config.Evidence is ev (the
// record of the run it runs in). Cheap: nothing is compiled again.
func (l *Loop) WithEvidence(ev *safety.Evidence) *Loop {
	c := *l
	c.cfg.Evidence = ev
	return &c
}

// With returns a Loop that shares l's tools and settings and runs in
// another place: its calls' keys are run/step/attempt/turn<t>/call<c>,
// requests carry run, step and attempt, j and rec receive its commits and
// call records, and b (nil: none) keeps large observations. Cheap:
// nothing is compiled again.
func (l *Loop) With(runID, stepID string, attempt int, j Journal, rec invoke.Recorder, b Blobs) *Loop {
	c := *l
	c.cfg.RunID, c.cfg.StepID, c.cfg.Attempt, c.cfg.Journal, c.cfg.Recorder, c.cfg.Blobs = runID, stepID, attempt, j, rec, b
	return &c
}
