package flow

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/flow/expression"
	"github.com/reinhq/rein/flow/template"
)

// Type is what a step does.
type Type string

// Step types. Agent and SubFlow are part of the format and rejected by
// validation with "not supported yet" until their issues land. Submit and
// Source steps wait for an agent (the workflow tool of package bridge): a
// submit step for the output the agent submits, a source step for the
// agent to ask a deterministic adapter to produce it.
const (
	LLM      Type = "llm"
	Tool     Type = "tool"
	Submit   Type = "submit"
	Source   Type = "source"
	Route    Type = "route"
	Plan     Type = "plan"
	Approval Type = "approval"
	Agent    Type = "agent"
	SubFlow  Type = "flow"
)

// OnError is what happens once a step has finally failed.
type OnError string

// Error policies.
const (
	Raise    OnError = "raise"    // the run fails (default)
	Skip     OnError = "skip"     // continue with fallback_value; the step is "defaulted"
	Fallback OnError = "fallback" // run fallback (or take fallback_value); the step "fell_back"
	Retry    OnError = "retry"    // retry every error class up to retries, then raise
	// Escalate parks the step for a person (a durable run waits): approve
	// runs it again, reject fails it with its error, settle provides its
	// output.
	Escalate OnError = "escalate"
)

// Defaults applied when a flow leaves a field out.
const (
	DefaultMaxIterations  = 1000
	DefaultConcurrency    = 8
	DefaultForEachLimit   = 4
	DefaultMaxOutputBytes = 1 << 20
	DefaultMaxInputBytes  = 1 << 20
	MaxRetries            = 10
	MaxRepeat             = 100
	DefaultBackoffInitial = 100 * time.Millisecond
	DefaultBackoffMax     = 5 * time.Second
	DefaultBackoffFactor  = 2.0
)

// OnFailure is a flow's on_failure:.
type OnFailure string

// OnFailure values.
const (
	OnFailureNone       OnFailure = "none"
	OnFailureCompensate OnFailure = "compensate"
)

// Flow is a loaded, validated and compiled flow. It is immutable and safe to
// run many times concurrently.
type Flow struct {
	// Name is the flow's name (or its id when it has no name).
	Name    string
	ID      string
	Version string
	// Format is the optional `schema:` tag (e.g. process.workflow.v1).
	Format string
	// Enabled is false for a flow that may not start (enabled: false).
	Enabled bool
	// Deliverables are the ids of the steps whose outputs a delivery
	// renders (deliverables:); nil means the final steps (FinalSteps).
	Deliverables []string
	// Idempotency is how a start is keyed: "input_hash" (the flow and its
	// input), "session_workflow_input_hash" (also the session id), or ""/"none".
	Idempotency string
	// Policy is the flow's policy:, rules the policy gate applies to its
	// tool calls besides the engine's gate (rules only add restrictions);
	// nil when it has none.
	Policy *PolicyDecl
	// Risk is the flow's risk: (what its runs' risk tier is assessed
	// with), and Review its review: (the reviewer); nil: rein.yaml's, if
	// any.
	Risk   *RiskDecl
	Review *ReviewDecl
	// OnFailure is what a durable run does when it fails:
	// OnFailureCompensate takes back the effects of its calls in reverse
	// order of completion (a saga); "" or OnFailureNone leaves them.
	OnFailure OnFailure
	// Retention is how long a durable store keeps the run after it settles
	// (zero: until pruned).
	Retention time.Duration
	// MaxIterations bounds step executions in one run (each for_each item
	// and each repeat round counts one). Defaults to DefaultMaxIterations.
	MaxIterations int
	Budgets       Budgets
	// Concurrency bounds the steps running at once. Defaults to DefaultConcurrency.
	Concurrency int
	// MaxInputBytes is the steps' MaxInputBytes where they set none.
	// Defaults to DefaultMaxInputBytes.
	MaxInputBytes int64
	// Inputs is the JSON Schema of the run input, or nil.
	Inputs *Schema
	// UndeclaredInputs are the names that templates and expressions use as
	// input fields when the flow declares no inputs; a run checks that the
	// input has them before any step runs.
	UndeclaredInputs []string
	Schemas          map[string]*Schema
	// Tools are the exec tools the flow file declares.
	Tools map[string]*ToolDecl
	// Steps in file order; Step.Index is the position here.
	Steps []*Step
	// Order is a topological order of step indexes (file order among peers).
	Order []int
	// byID indexes Steps by id once the graph is built.
	byID map[string]int
	// File is the path the flow was loaded from ("" for Parse without one).
	File string
	// Dir is the folder relative paths resolve against.
	Dir string
	// Source is the flow text as loaded.
	Source []byte
	// Files are the other files the flow was loaded from (schema files,
	// routes files) by absolute path, so a durable run can pin them with
	// the flow text.
	Files map[string][]byte
	// ReadsSteps is true when some template or expression reads the steps.
	// namespace (steps.<id>.status or .output); runs skip maintaining it
	// otherwise.
	ReadsSteps bool
	// Warnings are problems that do not stop the flow from running.
	Warnings []Diagnostic
}

// Budgets are the run-wide limits besides MaxIterations. Zero means unlimited
// (the run timeout) or unbounded (the counters).
type Budgets struct {
	MaxLLMCalls int
	MaxTokens   int
	Timeout     time.Duration
}

// Step is one compiled step.
type Step struct {
	ID    string
	Index int
	Type  Type
	// Requires are the ids of the direct upstream steps; RequireIdx their indexes.
	Requires   []string
	RequireIdx []int
	// ImplicitOrder is true when the step left requires out and follows the
	// previous step of the list: its one require is ordering, not a
	// dependency, so a skip of that step does not skip this one.
	ImplicitOrder bool
	// SkipFrom are the indexes of the upstream steps whose skip skips this
	// step: those named in an explicit requires
	// (approval steps excepted: a skipped approval means none was needed)
	// and those whose output the step reads, less those whose status its
	// when reads. In file order.
	SkipFrom []int
	// Downstream are the indexes of the steps that require this one directly.
	Downstream []int
	// When, Gate: compiled expressions or nil.
	When *expression.Program
	// WhenStatusOf lists upstream step ids whose status When reads
	// (steps.<id>.status); a skip of those does not propagate.
	WhenStatusOf map[string]bool
	Gate         *expression.Program
	// Premise, when set, is checked on the step's output after its gate:
	// when it does not hold, the step waits for a person (Premise).
	Premise *Premise
	// Guardrails are an llm step's (input: the rendered prompt, before
	// the model call; output: the reply, before it is the step's output);
	// a trip fails the step with a guardrail error. An agent step's are
	// its Agent's.
	Guardrails []*AgentGuardrail
	// Retries is how often a transient error is retried (every error with
	// on_error: retry); an llm, route, tool or plan step without retries:
	// gets the defaults (Options.Defaults, else DefaultRetries).
	Retries int
	Backoff Backoff
	// Timeout bounds one attempt; zero means none (the run's timeout still
	// applies). A step without timeout: gets the default of its type
	// (defaultTimeout).
	Timeout time.Duration
	OnError OnError
	// FallbackValue is used by on_error skip and fallback when HasFallbackValue.
	FallbackValue    any
	HasFallbackValue bool
	Fallback         *FallbackSpec
	Mandatory        bool
	OutputSchema     *Schema
	Model            string
	Prompt           *template.Template
	Tool             string
	// Args are the compiled args; nil means "the outputs of the direct
	// requires, keyed by step id" (and "input" for a root step).
	Args    *template.Value
	ForEach *ForEach
	Repeat  *Repeat
	// MaxOutputBytes bounds the canonical JSON size of the step's output.
	MaxOutputBytes int64
	// MaxInputBytes bounds what rendering produces for one execution: the
	// prompt (prompt_template, text, goal) or the args as JSON. Rendering
	// stops as soon as it passes the bound. Defaults to the flow's.
	MaxInputBytes int64
	// Skill names what an agent does for a submit step (a hint for the
	// agent; `skill:` alone makes a step a submit step).
	Skill string
	// Adapter names the adapter a source step's output comes from
	// (`adapter:` makes a step a source step).
	Adapter string
	// ApprovalRequired (approval: required on a tool step) makes the run
	// wait for a person before the tool executes.
	ApprovalRequired bool
	// Message is what an approval asks (type: approval, or with
	// ApprovalRequired); nil means a default naming the step and tool.
	Message *template.Template
	// RouteSpec is set for route steps, PlanSpec for plan steps, Agent for
	// agent steps (its Model is the step's model, its OutputSchema the
	// step's output_schema, its task the step's prompt_template).
	RouteSpec *RouteSpec
	PlanSpec  *PlanSpec
	Agent     *AgentDef
	// Pos is where the step starts in the file.
	Pos Pos
}

// Backoff shapes the waits between retries of transient failures: the n-th
// wait is min(Initial·Multiplier^(n-1), Max) with jitter (a deterministic
// draw in [½, 1] of that, seeded by run, step and attempt).
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
}

// FallbackSpec is what on_error: fallback runs: a value, another tool (with
// its own args), or another model (with the step's prompt unless it has its own).
type FallbackSpec struct {
	Value    any
	HasValue bool
	Tool     string
	Args     *template.Value
	Model    string
	Prompt   *template.Template
}

// ForEach runs a step once per item of a list; the items are visible to the
// step's templates as `item` and `index`, and the step's output is the list
// of per-item outputs in order.
type ForEach struct {
	Items       *expression.Program
	Concurrency int
}

// Repeat runs a step again until Until holds on its output or Max rounds ran.
// The previous round's output is visible as `previous`, the round (from 0) as
// `iteration`.
type Repeat struct {
	Until *expression.Program
	Max   int
}

// Pos is a position in a flow file (1-based).
type Pos struct {
	Line, Col int
}

// StepByID returns the step called id, or nil.
func (f *Flow) StepByID(id string) *Step {
	if f.byID != nil {
		if i, ok := f.byID[id]; ok {
			return f.Steps[i]
		}
		return nil
	}
	for _, s := range f.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// ParseDuration reads a Go duration ("90s", "1h30m") or a whole number of
// days ("30d"), the unit retention is usually written in.
func ParseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" {
		days, err := strconv.ParseUint(n, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}
