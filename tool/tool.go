// Package tool is the port for everything a flow can call that is not a
// model: Go functions registered by library users, exec tools declared in
// flow files (package tool/exec), and the tools of MCP servers (package
// tool/mcp). A tool declares what it does (Effect, Reversibility,
// Idempotent) so that the policy gate and the durable store can treat side
// effects with care.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/reinhq/rein/value/schema"
)

// Effect is the strongest thing a tool does to the world.
type Effect string

// Effects, weakest first.
const (
	EffectNone        Effect = "none"
	EffectRead        Effect = "read"
	EffectWrite       Effect = "write"
	EffectExternal    Effect = "external"
	EffectDestructive Effect = "destructive"
)

// Valid reports whether e is one of the declared effects ("" counts as none).
func (e Effect) Valid() bool {
	switch e {
	case "", EffectNone, EffectRead, EffectWrite, EffectExternal, EffectDestructive:
		return true
	}
	return false
}

// Reversibility says whether a tool's effect can be undone.
type Reversibility string

// Reversibility values.
const (
	Reversible    Reversibility = "reversible"
	Compensatable Reversibility = "compensatable"
	Irreversible  Reversibility = "irreversible"
)

// Valid reports whether r is a known value ("" means undeclared).
func (r Reversibility) Valid() bool {
	switch r {
	case "", Reversible, Compensatable, Irreversible:
		return true
	}
	return false
}

// Spec describes a tool.
type Spec struct {
	Name        string
	Description string
	// InputSchema and OutputSchema are JSON Schemas (draft 2020-12); nil
	// means "any JSON value". The output schema lets `rein validate` check
	// downstream references to the tool's fields.
	InputSchema   json.RawMessage
	OutputSchema  json.RawMessage
	Effect        Effect
	Reversibility Reversibility
	// Idempotent tools may be called again with the same idempotency key
	// without repeating their effect; a resumed run retries them.
	Idempotent bool
	// Undo (for a reversible tool) and Compensate (for a compensatable
	// one) name the registered tool that takes the effect back, with an
	// args template over the original call ({args.…}, {output.…}).
	// They are validated when a flow loads (a registered tool, args that
	// fit its input schema); the runtime renders them into each call's
	// effect record and runs them, through the policy gate, in a saga
	// (on_failure: compensate) or a remediation.
	Undo, Compensate *Compensation
	// Resources are templates naming what a call reads or writes, over
	// the same scope ("crm:customer/{output.id}").
	Resources []string
	// Tags classify the tool for the policy gate ("money", "user-facing",
	// "compliance", …).
	Tags []string
	// Verifies names the fields of the tool's output that are a source of
	// truth: JSON pointers (RFC 6901) into the output, where the token *
	// stands for every item of a list (every member of an object), or a
	// top-level field's bare name (account_id for /account_id). A value a
	// model writes is verified only when it equals a value at one of them
	// in an output of this run (safety.Evidence.Verify), never because some
	// text of an output contains it. A tool without Verifies verifies
	// nothing. safety.ParseVerifies reads an entry.
	Verifies []string
	// Premise, when set, is checked on every call's output (a tool
	// declaration's premise:); a call that contradicts it fails with a
	// *PremiseError after its effect, and the run pauses.
	Premise *Premise
}

// Compensation is a tool call that takes another call's effect back.
type Compensation struct {
	// Tool is the name of a registered tool.
	Tool string
	// Args is a JSON value whose string leaves are templates over the
	// original call: {args.<path>} and {output.<path>}.
	Args any
}

// Tool is the port. Call receives the step's rendered args as a JSON value
// (nil, bool, float64, string, []any, map[string]any) and returns a JSON
// value (or anything encoding/json can marshal). It must honour ctx and be
// safe for concurrent use. Errors should be classed with package fault; an
// unclassified error is a business error.
type Tool interface {
	Spec() Spec
	Call(ctx context.Context, args any) (any, error)
}

// Func builds a Tool from a spec and a function.
func Func(spec Spec, fn func(ctx context.Context, args any) (any, error)) Tool {
	return funcTool{spec: spec, fn: fn}
}

type funcTool struct {
	spec Spec
	fn   func(ctx context.Context, args any) (any, error)
}

func (t funcTool) Spec() Spec                                      { return t.spec }
func (t funcTool) Call(ctx context.Context, args any) (any, error) { return t.fn(ctx, args) }

// Typed builds a Tool from a function over Go types: the args are decoded
// into In with encoding/json and Out is returned as is. Decoding failures
// are business errors.
//
// Unless spec gives them, the input and output schemas are derived from In
// and Out (schema.Reflect, as model.SchemaFor does: fields without
// omitempty are required, unknown fields are rejected; in the output
// schema any value may also be null, as a nil slice, map or pointer
// encodes). So the engine checks the args before the call, `rein validate`
// catches a reference to a field Out does not have, and a planner sees
// both. An interface type (any) gives no schema.
func Typed[In, Out any](spec Spec, fn func(ctx context.Context, in In) (Out, error)) Tool {
	if spec.InputSchema == nil {
		spec.InputSchema = reflectedSchema(reflect.TypeFor[In](), nil)
	}
	if spec.OutputSchema == nil {
		spec.OutputSchema = reflectedSchema(reflect.TypeFor[Out](), &schema.ReflectOptions{Nullable: true})
	}
	return Func(spec, func(ctx context.Context, args any) (any, error) {
		var in In
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("tool %s: encode args: %w", spec.Name, err)
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, fmt.Errorf("tool %s: args do not fit %T: %w", spec.Name, in, err)
		}
		return fn(ctx, in)
	})
}

// reflectedSchema is the schema of t, or nil when t gives none (an
// interface type, or a kind JSON cannot hold, which the call reports).
func reflectedSchema(t reflect.Type, opts *schema.ReflectOptions) json.RawMessage {
	s, err := schema.Reflect(t, opts)
	if err != nil || s == nil {
		return nil
	}
	return s.JSON()
}

// CallInfo identifies one tool invocation. Tools find it in their context.
// For a plan step StepID is "step/plan-step" and Attempt the plan's number
// (1, then 1 more per replan).
type CallInfo struct {
	RunID   string
	StepID  string
	Attempt int
	// IdempotencyKey is stable for a given call and differs between calls;
	// pass it to external systems that deduplicate. A plain step's key is
	// "run/step/attempt"; for_each items, repeat rounds, fallbacks, plan
	// steps and agent calls extend it (the format is documented once, in
	// package invoke: run/step[item]#round/fallback/attempt, then
	// /plan<n>/<plan-step> or /turn<t>/call<c>).
	IdempotencyKey string
}

type callInfoKey struct{}

// WithCallInfo returns ctx carrying info.
func WithCallInfo(ctx context.Context, info *CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallInfoFrom returns the invocation's info, or a zero CallInfo outside a run.
func CallInfoFrom(ctx context.Context) CallInfo {
	if info, ok := ctx.Value(callInfoKey{}).(*CallInfo); ok && info != nil {
		return *info
	}
	return CallInfo{}
}

// Process identifies an operating-system process group a tool started for
// one call (package tool/exec starts each call in a group of its own).
type Process struct {
	// PGID is the group's id: the PID of its leader, the started program.
	PGID int
	// Start is the leader's start time as the system counts it (Linux:
	// clock ticks since boot, field 22 of /proc/PID/stat); 0 where unknown.
	// With Boot it tells the group apart from a later one that reuses the
	// id.
	Start uint64
	// Boot identifies the boot Start counts from (Linux:
	// /proc/sys/kernel/random/boot_id); "" where unknown.
	Boot string
	// Mark is the environment entry (NAME=VALUE) every process of the
	// call inherits, so that those that left the group (setsid) can be
	// found and stopped too; "" when the tool sets none.
	Mark string
}

// ProcessHook is told about every process group a tool starts. It runs on
// the tool's goroutine after the process started and before the tool waits
// for it (the process already runs), with the call's context, so
// CallInfoFrom names the run, step and attempt. It must be safe for
// concurrent use and should return promptly.
type ProcessHook func(ctx context.Context, p Process)

type processHookKey struct{}

// WithProcessHook returns ctx carrying hook, for the tools called with it
// (the engine records each group so that a resume can stop what a dead
// process left running).
func WithProcessHook(ctx context.Context, hook ProcessHook) context.Context {
	return context.WithValue(ctx, processHookKey{}, hook)
}

// HasProcessHook reports whether ctx carries a hook, so a tool can skip
// working out a Process nobody asked for.
func HasProcessHook(ctx context.Context) bool {
	h, _ := ctx.Value(processHookKey{}).(ProcessHook)
	return h != nil
}

// ProcessStarted tells ctx's hook, if any, that the tool started p. Tools
// that start processes call it once per process group.
func ProcessStarted(ctx context.Context, p Process) {
	if h, _ := ctx.Value(processHookKey{}).(ProcessHook); h != nil {
		h(ctx, p)
	}
}

// Registry maps tool names to Tools. The zero value is empty and ready;
// fill it before handing it to an engine (it is not safe for concurrent
// mutation).
type Registry struct {
	byName map[string]Tool
}

// Register adds t under its Spec().Name. It returns an error if the name is
// empty or taken.
func (r *Registry) Register(t Tool) error {
	name := t.Spec().Name
	if name == "" {
		return fmt.Errorf("register tool: empty name")
	}
	if r.byName == nil {
		r.byName = make(map[string]Tool)
	}
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("register tool %q: already registered", name)
	}
	r.byName[name] = t
	return nil
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	if r == nil {
		return nil, false
	}
	t, ok := r.byName[name]
	return t, ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
