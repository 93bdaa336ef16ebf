package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/internal/agent"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/internal/route"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/redact/seal"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// Config configures an Engine. Every field may be left zero.
type Config struct {
	// Models answers llm steps. Defaults to an empty registry (flows with
	// llm steps then fail to start).
	Models *model.Registry
	// Tools answers tool steps. Defaults to an empty registry.
	Tools *tool.Registry
	// Sink receives every event, in order, and may keep it (trace.Sink).
	// A run waits for its sink: wrap one that can be slow in
	// trace.NewAsync. Defaults to trace.Discard.
	Sink trace.Sink
	// Gate decides on every tool invocation. Defaults to safety.AllowAll.
	Gate safety.Gate
	// Risk and Review are rein.yaml risk: and review:, for flows without
	// their own. A run has risk tiers (safety.Controls) when its flow has
	// risk: or review: (its own or these), or a policy: whose rules read
	// the tier (defaults: true, min_tier). Nil: none.
	Risk   *safety.RiskConfig
	Review *safety.ReviewConfig
	// Store journals durable runs: each transition is committed before the
	// engine acts on it (see the package documentation). Defaults to
	// store.Ephemeral, which keeps nothing: such runs cannot be resumed,
	// and flows with approvals refuse to start.
	Store store.Store
	// Clock defaults to SystemClock.
	Clock Clock
	// NewRunID defaults to UUIDv7 (time-ordered) strings.
	NewRunID func() string
	// Owner names this process in run leases (durable stores only).
	// Defaults to host/pid/random.
	Owner string
	// LeaseTTL is how long a lease lasts without a heartbeat; heartbeats
	// come every third of it. Defaults to DefaultLeaseTTL.
	LeaseTTL time.Duration
	// OnCall, when set, receives the call record of every tool call the
	// engine makes (tool steps, their items and rounds, fallbacks, plan
	// steps), and the Late record of a tool that returned after the call
	// was given up at its deadline — which may come after the run settled.
	// It is called from the calls' goroutines, concurrently, and must not
	// block for long.
	OnCall func(invoke.Record)
	// Redactor hides secrets in every error message the engine records
	// (events, step rows, the Result). Defaults to redact.Process(): the
	// values of the process's environment variables whose names say they
	// are secrets.
	Redactor *redact.Redactor
	// Codec, when set, seals at rest what Redactor hides in the payloads a
	// resume reads (step outputs and inputs, a run's input, approvals'
	// args and outputs, call records' outputs, agents' transcripts): the
	// journal keeps them redacted, as views show them, and a sealed copy
	// beside them in the same transition (a sealed event), which a resume
	// opens, so it reads what the live run read. A run holding payloads
	// sealed with a key it lacks is not resumed. Nil stores them redacted
	// only.
	Codec *seal.Codec
	// Spend prices the model calls of durable runs and limits them by
	// tenant per day, in the Store's budget ledger (spend.go). Nil: no
	// ledger.
	Spend *Spend
}

// CachedFlows is how many flows an Engine keeps bound (their tools,
// models, compiled tool schemas, routers and plan catalogs resolved), the
// ones run last. Running a flow outside them binds it again, which costs
// about as much as a run of it.
const CachedFlows = 256

// Engine runs flows. It is safe for concurrent use; each Run is independent.
type Engine struct {
	cfg Config
	// pipe is the one invocation pipeline of every tool call.
	pipe invoke.Pipeline
	// bindings caches the resolved tools and models of the CachedFlows
	// flows run last; the registries do not change after New.
	bindings *lru.Cache[*flow.Flow, *bound]
	// runs pools finished runs' buffers.
	runs sync.Pool
	// durable: Config.Store keeps runs (it is not store.Ephemeral).
	durable bool
	// borrow: Config.Sink keeps no event (trace.Borrower), so a run's
	// event memory is reused.
	borrow bool
}

// New returns an Engine with cfg's defaults filled in.
func New(cfg Config) *Engine {
	if cfg.Models == nil {
		cfg.Models = &model.Registry{}
	}
	if cfg.Tools == nil {
		cfg.Tools = &tool.Registry{}
	}
	if cfg.Sink == nil {
		cfg.Sink = trace.Discard
	}
	if cfg.Gate == nil {
		cfg.Gate = safety.AllowAll
	}
	if cfg.Store == nil {
		cfg.Store = store.Ephemeral
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock
	}
	if cfg.NewRunID == nil {
		cfg.NewRunID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	if cfg.Owner == "" {
		cfg.Owner = NewOwner()
	}
	if cfg.Redactor == nil {
		cfg.Redactor = redact.Process()
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	bindings, err := lru.New[*flow.Flow, *bound](CachedFlows)
	if err != nil {
		panic(err) // only for a size ≤ 0
	}
	return &Engine{cfg: cfg, pipe: invoke.Pipeline{Gate: cfg.Gate, Now: cfg.Clock.Now}, bindings: bindings,
		durable: !store.IsEphemeral(cfg.Store), borrow: trace.Borrows(cfg.Sink)}
}

// RunOptions are per-run settings; a nil *RunOptions means defaults.
type RunOptions struct {
	// RunID fixes the run's id instead of generating one.
	RunID string
	// Session is the session id of flows with idempotency:
	// session_workflow_input_hash.
	Session string
	// Meta is stored with a durable run for whoever resumes it (package
	// rein records the config and script paths).
	Meta json.RawMessage
	// Tenant is recorded on a durable run (store.Run.Tenant) for a
	// surface that serves several tenants.
	Tenant string
	// IdempotencyKey, when set, is the run's start key instead of the one
	// the flow's idempotency: derives: a start with a key a run already
	// holds returns that run. The caller makes it unique across tenants.
	IdempotencyKey string
}

// Result is the outcome of a run.
type Result struct {
	RunID  string
	Flow   string
	Status trace.RunStatus
	// Outputs holds the output of every step that produced one (succeeded,
	// defaulted or fell_back), by step id.
	Outputs map[string]any
	Steps   map[string]StepResult
	// Error says why the run did not succeed; nil when it did.
	Error *RunError
	// Existing is true when the flow's idempotency key named a run that
	// already existed: this Result is that run's, and nothing new ran.
	Existing bool
	// Interrupted is true when the run's context ended with
	// ErrInterrupted: the run stopped without settling, committed nothing
	// more, and released its lease; Resume continues it. Status is then
	// running (steps in flight are running) and Error says why it stopped.
	Interrupted bool
	// Pending are the approvals a waiting run waits on.
	Pending  []*store.Approval
	Usage    Usage
	Duration time.Duration
}

// StepResult is one step's outcome.
type StepResult struct {
	Status trace.StepStatus
	// Attempts is the number of the step's last attempt (1 when it was not
	// retried); for for_each and repeat steps, the highest any item or
	// round reached. Corrective requests do not count: see
	// StepModelUse.Corrections.
	Attempts int
	Duration time.Duration
	// Error is the step's last failure, also when on_error let the run go on.
	Error *RunError
	// Model counts the step's model calls; nil for a step that made none
	// (most steps of most flows: a Result's entries stay small). ModelUse
	// reads it.
	Model *StepModelUse
}

// StepModelUse is what a step spent on models.
type StepModelUse struct {
	// Corrections counts the corrective requests made after a model reply
	// broke the step's output schema (at most one per attempt).
	Corrections int
	// LLMCalls, TokensIn and TokensOut are the model calls the step made
	// (corrective ones, the router's and the planner's included) and their
	// tokens, as counted by the process that produced this Result.
	LLMCalls  int
	TokensIn  int
	TokensOut int
}

// ModelUse is s.Model, or zero counts for a step that made no model call.
func (s StepResult) ModelUse() StepModelUse {
	if s.Model == nil {
		return StepModelUse{}
	}
	return *s.Model
}

// modelUseOf is the Model of a step that spent use, nil when it made no
// model call.
func modelUseOf(corrections, llmCalls, tokensIn, tokensOut int) *StepModelUse {
	if corrections == 0 && llmCalls == 0 && tokensIn == 0 && tokensOut == 0 {
		return nil
	}
	return &StepModelUse{Corrections: corrections, LLMCalls: llmCalls, TokensIn: tokensIn, TokensOut: tokensOut}
}

// Usage counts what a run consumed, against its budgets.
type Usage struct {
	Iterations int `json:"iterations"`
	LLMCalls   int `json:"llm_calls"`
	TokensIn   int `json:"tokens_in"`
	TokensOut  int `json:"tokens_out"`
}

// RunError is a run's or step's failure in a form fit for people and JSON.
type RunError struct {
	Class   fault.Class  `json:"class"`
	Step    string       `json:"step,omitempty"`
	Budget  string       `json:"budget,omitempty"`
	Origin  trace.Origin `json:"origin,omitempty"`
	Message string       `json:"message"`
	err     error
}

// Error returns the message, prefixed with the step.
func (e *RunError) Error() string {
	if e.Step != "" {
		return "step " + e.Step + ": " + e.Message
	}
	return e.Message
}

// Unwrap returns the underlying error.
func (e *RunError) Unwrap() error { return e.err }

// InputError means the run input does not fit the flow; nothing ran.
type InputError struct {
	Flow    string
	Problem string
	// Missing are the fields the flow's templates read that the input
	// lacks, when that is the problem.
	Missing []string
}

// Error describes the problem.
func (e *InputError) Error() string {
	return fmt.Sprintf("input for flow %s: %s", e.Flow, e.Problem)
}

// Run executes f with input (a JSON value, usually map[string]any) and waits
// for it to settle. The error is non-nil only when the run could not start:
// an *InputError when the input does not fit the flow's inputs (nothing ran,
// nothing was written), or an error naming a tool or model the engine
// cannot resolve. A run that started always comes back as a Result, whose
// Status and Error say how it ended; cancelling ctx cancels the run, unless
// its cause is ErrInterrupted and the run is durable: then the run stops
// and stays resumable (Result.Interrupted).
func (e *Engine) Run(ctx context.Context, f *flow.Flow, input any, opts *RunOptions) (*Result, error) {
	if f == nil {
		return nil, errors.New("engine: Run needs a flow")
	}
	if !f.Enabled {
		return nil, fmt.Errorf("engine: flow %s is disabled (enabled: false in %s); nothing ran", f.Name, f.File)
	}
	in, err := CheckInput(f, input)
	if err != nil {
		return nil, err
	}
	bound, err := e.bind(f)
	if err != nil {
		return nil, err
	}
	id := ""
	if opts != nil {
		id = opts.RunID
	}
	if id == "" {
		id = e.cfg.NewRunID()
	}
	durable := e.durable
	if why := needsStore(f); why != "" && !durable {
		return nil, fmt.Errorf("engine: flow %s cannot run in memory: %s", f.Name, why)
	}
	var (
		run    *store.Run
		create *store.CreateRunParams
	)
	leased := e.cfg.Clock.Now() // the run is created leased (see durability.leased)
	if durable {
		var existing *Result
		if run, create, existing, err = e.start(ctx, f, id, in, opts); err != nil || existing != nil {
			return existing, err
		}
	}
	r := newRun(e, f, bound, id, in)
	if opts != nil {
		r.tenant = opts.Tenant
	}
	if durable {
		r.d = durability{on: true, version: run.Version, create: create, owner: e.cfg.Owner, leased: leased, firstAttempt: map[int]int{}, decisions: map[string]*store.Approval{}}
		r.sealInput(in)
	}
	res := r.execute(ctx)
	r.recycle()
	return res, nil
}

// bound resolves the flow's tools and models once per run.
type bound struct {
	tools  []tool.Tool // by step index (nil for non-tool steps)
	models []model.Model
	fbTool []tool.Tool
	fbMdl  []model.Model
	specs  []tool.Spec
	// kinds are the steps' kinds (kinds), by step index.
	kinds []*kind
	// inSchemas / fbInSchemas are the compiled input schemas of the tools.
	inSchemas   []*flow.Schema
	fbInSchemas []*flow.Schema
	// routers and catalogs of route and plan steps, by step index.
	routers  []*route.Router
	catalogs []*plan.Catalog
	// agents are the loops of agent steps, by step index.
	agents []*agent.Loop
	// gate decides the flow's calls: the engine's, joined with the
	// flow's policy: rules. prov and fbProv say where each tool step's
	// args come from (its fallback tool's), for the gate; nil without one.
	gate         safety.Gate
	prov, fbProv []safety.Provenance
	// tiers are the flow's risk tiers (engine/risk.go); nil without them.
	tiers *tiers
	// pipe is the pipeline of the flow's agent loops: the engine's, with
	// the flow's gate.
	pipe *invoke.Pipeline
	// evRef names each step's call in the run's evidence ("step <id>").
	evRef []string
	// flowHash and flowPath are what a durable run pins (FlowHash, the
	// absolute path), worked out once per flow: the path costs two stat
	// calls of os.Getwd.
	flowHash, flowPath string
}

func (b *bound) inputSchema(i int, fallback bool) *flow.Schema {
	if fallback {
		return b.fbInSchemas[i]
	}
	return b.inSchemas[i]
}

func (e *Engine) bind(f *flow.Flow) (*bound, error) {
	if b, ok := e.bindings.Get(f); ok {
		return b, nil
	}
	b := &bound{tools: make([]tool.Tool, len(f.Steps)), models: make([]model.Model, len(f.Steps)),
		fbTool: make([]tool.Tool, len(f.Steps)), fbMdl: make([]model.Model, len(f.Steps)), specs: make([]tool.Spec, len(f.Steps)),
		kinds: make([]*kind, len(f.Steps))}
	if e.durable {
		b.flowHash, b.flowPath = FlowHash(f), absPath(f.File)
	}
	b.inSchemas, b.fbInSchemas = make([]*flow.Schema, len(f.Steps)), make([]*flow.Schema, len(f.Steps))
	// the flow's gate first: agent steps' loops and plan executors are
	// bound with it.
	bb := &binder{e: e}
	e.bindGate(f, b, bb)
	for i, s := range f.Steps {
		k := kinds[s.Type]
		if k == nil {
			bb.problems = append(bb.problems, fmt.Sprintf("step %s: type %s is not supported yet", s.ID, s.Type))
			continue
		}
		b.kinds[i] = k
		k.bind(bb, b, s)
		if fb := s.Fallback; fb != nil {
			if fb.Tool != "" {
				b.fbTool[i] = bb.tool(fb.Tool, s.ID)
				b.fbInSchemas[i] = bb.inputSchema(b.fbTool[i], s.ID)
			}
			if fb.Model != "" {
				b.fbMdl[i] = bb.model(fb.Model, s.ID)
			}
		}
	}
	if len(bb.problems) > 0 {
		return nil, fmt.Errorf("engine: flow %s cannot start:\n  %s", f.Name, strings.Join(bb.problems, "\n  "))
	}
	if b.tiers != nil {
		b.tiers.assessFlow(e, f, b)
	}
	e.bindings.Add(f, b)
	return b, nil
}
