package workflowtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// DefaultMaxRequestBytes bounds a request (and so a submission) before it
// is parsed: 8 MiB.
const DefaultMaxRequestBytes = 8 << 20

// Options configure a Workflow. A nil *Options means defaults; Store is
// required.
type Options struct {
	// Store holds the tasks (durable runs). Required; it must be durable.
	Store store.Store
	// Load says how the flow is loaded (Go tools, models, config, script);
	// a task's pinned flow is loaded the same way. Defaults to what sits
	// beside the flow.
	Load *project.LoadOptions
	// Sink receives the events of the tasks' runs. Defaults to none.
	Sink trace.Sink
	// Gate decides the tasks' tool calls and source adapters, before the
	// rules of the flow's rein.yaml and flow. Defaults to those alone.
	Gate safety.Gate
	// DeliveryDir is the folder prepare_delivery writes into, one
	// subfolder per task. Defaults to "deliveries" beside the flow.
	DeliveryDir string
	// MaxRequestBytes bounds a request's JSON, the submitted data
	// included, before it is parsed. Defaults to DefaultMaxRequestBytes.
	MaxRequestBytes int64
}

// Workflow is one flow served as a tool. It keeps no task state: every
// action reads and writes the store. It is safe for concurrent use.
type Workflow struct {
	path string
	name string
	flow *flow.Flow
	opts Options
	// red hides the project's secrets in what the workflow journals
	// itself (rejected submissions, adapters' gate decisions, deliveries).
	red *redact.Redactor
	// client runs, resumes, decides and cancels the tasks.
	client *rein.Client
}

// New loads the flow at path (a flow file or a folder with flow.yaml) and
// checks that every source step's adapter exists. Errors are the flow's
// diagnostics, or an unknown adapter.
func New(path string, opts *Options) (*Workflow, error) {
	w := &Workflow{path: path}
	if opts != nil {
		w.opts = *opts
	}
	if w.opts.Store == nil || store.IsEphemeral(w.opts.Store) {
		return nil, errors.New("bridge: a workflow needs a durable store (Options.Store)")
	}
	if w.opts.Load == nil {
		w.opts.Load = &project.LoadOptions{}
	}
	if w.opts.MaxRequestBytes <= 0 {
		w.opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	p, err := project.Load(path, w.opts.Load)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if _, err := bindAdapters(p.Flow, p.ConfigPath); err != nil {
		return nil, err
	}
	w.flow = p.Flow
	w.name = ToolName(p.Flow)
	w.red = p.Redactor()
	w.client, err = rein.Open(context.Background(), rein.Config{Store: w.opts.Store, Load: w.opts.Load,
		Sink: w.opts.Sink, Gate: w.opts.Gate, Redactor: w.red})
	if err != nil {
		return nil, err
	}
	w.opts.Load = w.client.LoadOptions() // a task's pinned flow parses once per Workflow
	if w.opts.DeliveryDir == "" {
		w.opts.DeliveryDir = filepath.Join(p.Dir, "deliveries")
	}
	return w, nil
}

// ToolName is the name of f's workflow tool: its name (or id) with every
// character outside [A-Za-z0-9_-] as _, then "_workflow".
func ToolName(f *flow.Flow) string {
	n := f.Name
	if n == "" {
		n = f.ID
	}
	b := []byte(n)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b) + "_workflow"
}

// Name returns the tool's name, `<name>_workflow`.
func (w *Workflow) Name() string { return w.name }

// Request is one action's arguments. Action is start, submit,
// submit_from_source, prepare_delivery, status or cancel.
type Request struct {
	Action string `json:"action"`
	// WorkflowID, SessionID and Input start a task (WorkflowID, when
	// given, must be the flow's id or name).
	WorkflowID string          `json:"workflow_id,omitempty"`
	SessionID  string          `json:"session_id,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	// TaskID names the task of every other action.
	TaskID string `json:"task_id,omitempty"`
	// StepID and Skill name the step of submit and submit_from_source;
	// Data is the submitted output.
	StepID string          `json:"step_id,omitempty"`
	Skill  string          `json:"skill,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
	// Reason says why a task is cancelled.
	Reason string `json:"reason,omitempty"`
}

// Handle decodes raw (a Request as JSON, at most MaxRequestBytes) and
// does it. The error is always an *Error.
func (w *Workflow) Handle(ctx context.Context, raw []byte) (*Answer, error) {
	if int64(len(raw)) > w.opts.MaxRequestBytes {
		return nil, errorf(fault.Format, "", "the request is %d bytes, more than the limit of %d: submit a smaller output", len(raw), w.opts.MaxRequestBytes)
	}
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, errorf(fault.Format, "", "the request is not a JSON object of {action, ...}: %v", err)
	}
	return w.Do(ctx, &req)
}

// Do performs req. The error is always an *Error: business for a request
// that does not fit the task (a step that is not ready, a broken
// contract), format for data that is not JSON or too large, not_found for
// an unknown task or step, conflict for a task that finished or a
// concurrent submission (retryable), policy for a disabled workflow.
func (w *Workflow) Do(ctx context.Context, req *Request) (*Answer, error) {
	if req == nil {
		return nil, errorf(fault.Format, "", "no request")
	}
	req.Input, req.Data = jsonText(req.Input), jsonText(req.Data)
	if n := int64(len(req.Data) + len(req.Input)); n > w.opts.MaxRequestBytes {
		return nil, errorf(fault.Format, "/data", "the submitted data is %d bytes, more than the limit of %d: submit a smaller output", n, w.opts.MaxRequestBytes)
	}
	var a *Answer
	var err error
	switch req.Action {
	case "start":
		a, err = w.start(ctx, req)
	case "submit", "submit_from_source":
		a, err = w.submit(ctx, req)
	case "prepare_delivery":
		a, err = w.prepareDelivery(ctx, req)
	case "status":
		a, err = w.status(ctx, req)
	case "cancel":
		a, err = w.cancel(ctx, req)
	case "":
		return nil, errorf(fault.Format, "/action", "the request names no action: use start, submit, submit_from_source, prepare_delivery, status or cancel")
	default:
		return nil, errorf(fault.Format, "/action", "unknown action %q: use start, submit, submit_from_source, prepare_delivery, status or cancel", req.Action)
	}
	if err != nil {
		return nil, asError(err)
	}
	return a, nil
}

// Tool returns the workflow as a tool.Tool: its input schema is
// InputSchema, Call takes a Request (as JSON values or json.RawMessage)
// and returns the *Answer, or an *Error.
func (w *Workflow) Tool() tool.Tool { return tool.Func(spec(w.flow), w.call) }

// spec is the spec of f's workflow tool.
func spec(f *flow.Flow) tool.Spec {
	return tool.Spec{Name: ToolName(f), Description: description(f), InputSchema: schemaFor(f),
		OutputSchema: OutputSchema(), Effect: tool.EffectWrite}
}

func (w *Workflow) call(ctx context.Context, args any) (any, error) {
	raw, ok := args.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(args); err != nil {
			return nil, errorf(fault.Format, "", "the arguments are not JSON: %v", err)
		}
	}
	a, err := w.Handle(ctx, raw)
	if err != nil {
		return nil, err
	}
	return a, nil
}

func description(f *flow.Flow) string {
	return fmt.Sprintf("Drive workflow %s: start a task, then follow next_actions (submit each step's output, or submit_from_source), prepare_delivery once it succeeded; status and cancel at any time. Keep only task_id.", f.Name)
}

// Register registers the workflow's tool in reg: a tool pack's entry
// point. It fails when reg holds a tool of that name already.
func (w *Workflow) Register(reg *tool.Registry) error { return reg.Register(w.Tool()) }

// Register loads the workflow at each path with opts and registers its
// tool in reg.
func Register(reg *tool.Registry, opts *Options, paths ...string) error {
	for _, p := range paths {
		w, err := New(p, opts)
		if err != nil {
			return err
		}
		if err := w.Register(reg); err != nil {
			return err
		}
	}
	return nil
}
