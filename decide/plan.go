package decide

import (
	"context"
	"errors"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// The plan runtime's values, read through these names.
type (
	// Plan is a parsed plan: a goal and steps of tool calls.
	Plan = plan.Plan
	// Problem is one problem of a plan, at its JSON pointer.
	Problem = plan.Problem
	// PlanEvent is what the executor reports of a plan step as it runs.
	PlanEvent = plan.Event
	// StepError is the failure of one plan step (its id, tool and error).
	StepError = plan.StepError
)

// What a PlanEvent reports (PlanEvent.Kind).
const (
	StepStarted = plan.StepStarted // a tool call is about to be made
	StepSettled = plan.StepSettled // it succeeded or failed
	StepReused  = plan.StepReused  // a completed step, listed again, is not run
)

// DefaultMaxSteps is the longest plan accepted when PlanOptions names no
// limit.
const DefaultMaxSteps = plan.DefaultMaxSteps

// PlanOptions say which tools of a toolbox a plan may call and how long it
// may be.
type PlanOptions struct {
	// Allowed names the tools a plan may call; nil: every tool.
	Allowed []string
	// MaxSteps is the longest plan accepted; 0: DefaultMaxSteps.
	MaxSteps int
}

// Catalog is the set of tools a plan may call, with their schemas compiled
// once.
type Catalog struct {
	tools *tool.Registry
	cat   *plan.Catalog
	max   int // PlanOptions.MaxSteps
}

// NewCatalog is the catalog of tb's tools that opts allows. Errors: a name
// of opts.Allowed that tb has no tool of, a MaxSteps below 0, a tool whose
// schema does not compile.
func NewCatalog(tb *project.Toolbox, opts PlanOptions) (*Catalog, error) {
	if opts.MaxSteps < 0 {
		return nil, fault.Errorf(fault.Format, "max steps must be at least 1, not %d", opts.MaxSteps)
	}
	cfg := plan.CatalogConfig{MaxSteps: opts.MaxSteps, Allowed: opts.Allowed}
	for _, name := range tb.Tools.Names() {
		t, _ := tb.Tools.Lookup(name)
		cfg.Tools = append(cfg.Tools, t.Spec())
	}
	cat, err := plan.NewCatalog(cfg)
	if err != nil {
		return nil, err
	}
	return &Catalog{tools: tb.Tools, cat: cat, max: opts.MaxSteps}, nil
}

// Tools are the names of the tools the catalog allows, sorted.
func (c *Catalog) Tools() []string { return c.cat.Allowed() }

// Checked is a plan read and checked against a catalog. Problems is nil
// when the plan is valid; otherwise it lists every problem, Cause is the
// classed error behind them (fault.Format, or the budget of a plan over
// max steps: fault.BudgetOf), and Plan is nil when it did not parse.
type Checked struct {
	Plan     *Plan
	Problems []Problem
	Cause    error
	cat      *Catalog
}

// CheckPlan parses data (strict JSON: no unknown fields or duplicate keys)
// and validates the plan against cat: unique step ids, known and allowed
// tools, depends_on and $ref only to earlier steps, $ref paths the tool's
// output schema declares, args valid against each tool's input schema, the
// length. Problems of the plan are in the Checked; err is anything else.
func CheckPlan(cat *Catalog, data []byte) (*Checked, error) {
	c := &Checked{cat: cat}
	p, err := plan.Parse(data)
	var pe *plan.ParseError
	if errors.As(err, &pe) {
		c.Problems, c.Cause = pe.Problems, fault.New(fault.Format, err)
		return c, nil
	} else if err != nil {
		return nil, err
	}
	c.Plan = p
	err = plan.Validate(p, cat.cat)
	var ve *plan.ValidationError
	if errors.As(err, &ve) {
		c.Problems, c.Cause = ve.Problems, err
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

// RunOptions are how a checked plan runs.
type RunOptions struct {
	// Gate decides every call (nil: every call is allowed).
	Gate safety.Gate
	// OnGate, when set, is told of every decision of the gate, with the
	// call's idempotency key (a refusal is also the call's error).
	OnGate func(call string, inv *safety.Invocation, d safety.Decision)
	// OnEvent, when set, is told of each plan step as it starts and
	// settles, one event at a time.
	OnEvent func(PlanEvent)
}

// Run executes a valid plan: each step once the steps it depends on
// succeeded, independent steps in parallel, every call through rein's
// invocation pipeline and opts.Gate, with no retry and no replan: the
// first failed step ends the run (a *StepError), and the steps that depend
// on it do not run. It returns the outputs of the steps that succeeded, by
// step id. A plan with problems is refused with its Cause.
func (c *Checked) Run(ctx context.Context, opts RunOptions) (map[string]any, error) {
	if c.Problems != nil {
		return nil, c.Cause
	}
	gate := opts.Gate
	if gate == nil {
		gate = safety.AllowAll
	}
	cfg := plan.ExecutorConfig{Catalog: c.cat.cat, Tools: c.cat.tools, Gate: gate,
		MaxExecuted: max(c.cat.max, plan.DefaultMaxExecuted), OnEvent: opts.OnEvent}
	if opts.OnGate != nil {
		cfg.Recorder = gateRecorder(opts.OnGate)
	}
	ex, err := plan.NewExecutor(cfg)
	if err != nil {
		return nil, err
	}
	st := &plan.State{RunID: "plan"}
	err = ex.Execute(ctx, c.Plan, st)
	return st.Outputs(), err
}

// gateRecorder hands the pipeline's gate decisions to a function.
type gateRecorder func(call string, inv *safety.Invocation, d safety.Decision)

func (g gateRecorder) GateDecided(at invoke.Position, inv *safety.Invocation, d safety.Decision) {
	g(at.Key(), inv, d)
}

func (gateRecorder) Called(invoke.Record) {}
