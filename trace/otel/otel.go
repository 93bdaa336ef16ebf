// Package otel is a trace.Sink that turns a run's journal events into
// OpenTelemetry spans named and attributed after the GenAI semantic
// conventions: the run is `invoke_workflow {flow}`, an agent step
// `invoke_agent {agent}`, any other step `step {id}`, each model call
// `chat {model}` (gen_ai.request.model, gen_ai.provider.name, the usage
// tokens) and each tool call `execute_tool {tool}` (gen_ai.tool.name,
// gen_ai.tool.call.id); a failure is the span's error status. The span
// times are the events' (a model call's and a tool call's from their
// durations). A run whose events arrive with a span in their context
// (a server continuing a caller's trace) is that span's child.
//
// The sink links the OTel API and the SDK's exporters only through the
// TracerProvider it is given; Setup builds one exporting over OTLP
// (http/protobuf) from the OTEL_* environment.
package otel

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/trace"
)

// ScopeName is the instrumentation scope of the sink's tracer.
const ScopeName = "github.com/reinhq/rein/trace/otel"

// Options configure a Sink.
type Options struct {
	// Redactor hides secrets in every string the sink puts on a span
	// (error messages, names); events come redacted by the engine, this
	// is the second line. Nil hides credential-shaped strings only.
	Redactor *redact.Redactor
	// Provider names the provider of a model (gen_ai.provider.name); ""
	// (and a nil Provider) leaves it to the default: the part of a
	// provider/model name before the slash, else "rein" (a scripted or
	// replayed model, a name no one mapped). rein's CLI maps the names
	// rein.yaml models: declares (genai.ProviderOf).
	Provider func(model string) string
}

// Sink makes spans of the events it is handed. It keeps no event (a
// trace.Borrower) and is safe for concurrent use by several runs.
type Sink struct {
	tracer oteltrace.Tracer
	opts   Options
	mu     sync.Mutex
	runs   map[string]*runSpans
}

var _ trace.Borrower = (*Sink)(nil)

// New returns a Sink making its spans with tp's tracer.
func New(tp oteltrace.TracerProvider, opts *Options) *Sink {
	s := &Sink{tracer: tp.Tracer(ScopeName), runs: map[string]*runSpans{}}
	if opts != nil {
		s.opts = *opts
	}
	if own := s.opts.Provider; own != nil {
		s.opts.Provider = func(model string) string {
			if p := own(model); p != "" {
				return p
			}
			return defaultProvider(model)
		}
	} else {
		s.opts.Provider = defaultProvider
	}
	return s
}

func defaultProvider(model string) string {
	if p, _, ok := strings.Cut(model, "/"); ok && p != "" {
		return p
	}
	return "rein"
}

// BorrowsEvents marks the Sink as a trace.Borrower.
func (*Sink) BorrowsEvents() {}

// runSpans are the open spans of one run.
type runSpans struct {
	flow  string
	ctx   context.Context // the run span's
	run   oteltrace.Span
	steps map[string]*stepSpan
	// calls are an agent's tool calls by key, open until their agent_call
	// event names the model's call id.
	calls map[string]openCall
	// guardTrips counts the run's guardrail events.
	guardTrips int
}

type stepSpan struct {
	ctx  context.Context
	span oteltrace.Span
}

type openCall struct {
	span oteltrace.Span
	end  time.Time
}

// Emit turns e into span starts, ends or whole spans.
func (s *Sink) Emit(ctx context.Context, e *trace.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[e.RunID]
	switch e.Kind {
	case trace.RunStarted, trace.RunResumed:
		if r != nil {
			return
		}
		r = &runSpans{flow: e.Flow, steps: map[string]*stepSpan{}, calls: map[string]openCall{}}
		r.ctx, r.run = s.tracer.Start(ctx, s.str(OpInvokeWorkflow+" "+e.Flow), oteltrace.WithTimestamp(e.Time),
			oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(
				attribute.String(AttrOperationName, OpInvokeWorkflow), attribute.String(AttrWorkflowName, s.str(e.Flow)),
				attribute.String(AttrRunID, e.RunID)))
		s.runs[e.RunID] = r
		return
	}
	if r == nil {
		return // a run this sink did not see start (or already ended)
	}
	switch e.Kind {
	case trace.StepStarted:
		s.endStep(r, e.StepID, e.Time, "", "", "")
		name, op := "step "+e.StepID, ""
		attrs := []attribute.KeyValue{attribute.String(AttrRunID, e.RunID), attribute.String(AttrStepID, e.StepID),
			attribute.String(AttrStepType, e.StepType), attribute.Int(AttrAttempt, e.Attempt)}
		if e.StepType == "agent" {
			agent := e.StepID
			if agent == "agent" && r.flow != "" {
				agent = r.flow // an agent folder's run: its one step is the agent
			}
			name, op = OpInvokeAgent+" "+agent, OpInvokeAgent
			attrs = append(attrs, attribute.String(AttrOperationName, op), attribute.String(AttrAgentName, s.str(agent)))
			if e.Model != "" {
				attrs = append(attrs, attribute.String(AttrRequestModel, s.str(e.Model)))
			}
		}
		ctx, span := s.tracer.Start(r.ctx, s.str(name), oteltrace.WithTimestamp(e.Time), oteltrace.WithAttributes(attrs...))
		r.steps[e.StepID] = &stepSpan{ctx: ctx, span: span}
	case trace.StepSettled:
		s.endStep(r, e.StepID, e.Time, e.Status, e.ErrorClass, s.failure(e))
	case trace.ModelCall:
		s.chat(r, e)
	case trace.CallRecorded:
		s.toolCall(r, e)
	case trace.AgentCall:
		s.agentCall(r, e)
	case trace.GuardrailTripped:
		s.guardrail(r, e)
	case trace.RunSettled, trace.RunParked: // settled, or waiting for a person
		s.endRun(r, e)
		delete(s.runs, e.RunID)
	}
}

// guardrail adds a guardrail's trip to its step's span (else the run's)
// as a span event, and counts it for the run's span.
func (s *Sink) guardrail(r *runSpans, e *trace.Event) {
	r.guardTrips++
	g, err := journal.DecodeGuardrailTrip(e.Data)
	if err != nil {
		return
	}
	span := r.run
	if st := r.steps[e.StepID]; st != nil {
		span = st.span
	}
	span.AddEvent(EventGuardrailTripped, oteltrace.WithTimestamp(e.Time), oteltrace.WithAttributes(
		attribute.String(AttrGuardrailName, s.str(g.Name)), attribute.String(AttrGuardrailKind, g.Kind),
		attribute.String(AttrGuardrailSide, g.Side), attribute.String(AttrDecision, e.Decision),
		attribute.String(AttrStepID, e.StepID), attribute.Int(AttrTurn, e.Turn)))
}

// parent is the span context of e's step, else the run's.
func (r *runSpans) parent(stepID string) context.Context {
	if st := r.steps[stepID]; st != nil {
		return st.ctx
	}
	if i := strings.IndexByte(stepID, '/'); i > 0 {
		if st := r.steps[stepID[:i]]; st != nil {
			return st.ctx
		}
	}
	return r.ctx
}

func (s *Sink) chat(r *runSpans, e *trace.Event) {
	start := e.Time.Add(-e.Duration())
	attrs := []attribute.KeyValue{attribute.String(AttrOperationName, OpChat), attribute.String(AttrRequestModel, s.str(e.Model)),
		attribute.String(AttrProviderName, s.str(s.opts.Provider(e.Model))),
		attribute.Int(AttrInputTokens, e.TokensIn), attribute.Int(AttrOutputTokens, e.TokensOut),
		attribute.String(AttrRunID, e.RunID), attribute.String(AttrStepID, e.StepID), attribute.Int(AttrAttempt, e.Attempt)}
	if e.Decision != "" {
		attrs = append(attrs, attribute.String(AttrDecision, e.Decision))
	}
	_, span := s.tracer.Start(r.parent(e.StepID), s.str(OpChat+" "+e.Model), oteltrace.WithTimestamp(start),
		oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithAttributes(attrs...))
	s.status(span, e.ErrorClass, s.failure(e))
	span.End(oteltrace.WithTimestamp(e.Time))
}

// toolCall makes the execute_tool span of a settled tool call record: a
// flow step's and an agent's (whose record names the model's call id) at
// once; an agent's of a journal before version 3 is kept open for its
// agent_call event, which names the id.
func (s *Sink) toolCall(r *runSpans, e *trace.Event) {
	c := e.Call
	if c == nil || c.Kind != journal.CallTool || !c.Status.Settled() {
		return
	}
	start := c.StartedAt
	if start.IsZero() {
		start = e.Time.Add(-c.Duration)
	}
	end := start.Add(c.Duration)
	attrs := []attribute.KeyValue{attribute.String(AttrOperationName, OpExecuteTool), attribute.String(AttrToolName, s.str(c.Name)),
		attribute.String(AttrToolType, "function"), attribute.String(AttrRunID, e.RunID), attribute.String(AttrStepID, c.StepID),
		attribute.Int(AttrAttempt, c.Attempt), attribute.String(AttrCallKey, c.Key), attribute.String(AttrStatus, string(c.Status))}
	switch {
	case c.Turn == 0:
		attrs = append(attrs, attribute.String(AttrToolCallID, c.Key))
	case c.Agent != nil: // an agent's call: its record names the model's call id
		attrs = append(attrs, attribute.String(AttrToolCallID, s.str(c.Agent.ID)), attribute.Int(AttrTurn, c.Turn))
	}
	_, span := s.tracer.Start(r.parent(c.StepID), s.str(OpExecuteTool+" "+c.Name), oteltrace.WithTimestamp(start),
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(attrs...))
	s.status(span, c.ErrorClass, s.str(c.Error))
	if c.Turn > 0 && c.Agent == nil { // a journal before version 3: its agent_call event names the id
		if old, ok := r.calls[c.Key]; ok {
			old.span.End(oteltrace.WithTimestamp(old.end))
		}
		r.calls[c.Key] = openCall{span: span, end: end}
		return
	}
	span.End(oteltrace.WithTimestamp(end))
}

// agentCall names the model's id of an agent's call on its execute_tool
// span and ends it.
func (s *Sink) agentCall(r *runSpans, e *trace.Event) {
	var c struct {
		ID     string `json:"id"`
		Key    string `json:"key"`
		Status string `json:"status"`
	}
	if json.Unmarshal([]byte(e.Data), &c) != nil || c.Key == "" {
		return
	}
	open, ok := r.calls[c.Key]
	if !ok {
		return
	}
	delete(r.calls, c.Key)
	open.span.SetAttributes(attribute.String(AttrToolCallID, s.str(c.ID)), attribute.Int(AttrTurn, e.Turn))
	open.span.End(oteltrace.WithTimestamp(open.end))
}

func (s *Sink) endStep(r *runSpans, stepID string, at time.Time, status, class, failure string) {
	st := r.steps[stepID]
	if st == nil {
		return
	}
	delete(r.steps, stepID)
	if status != "" {
		st.span.SetAttributes(attribute.String(AttrStatus, status))
	}
	if status == string(trace.StepFailed) {
		s.status(st.span, class, failure)
	}
	st.span.End(oteltrace.WithTimestamp(at))
}

func (s *Sink) endRun(r *runSpans, e *trace.Event) {
	for id := range r.steps {
		s.endStep(r, id, e.Time, "", "", "")
	}
	for k, c := range r.calls {
		c.span.End(oteltrace.WithTimestamp(c.end))
		delete(r.calls, k)
	}
	r.run.SetAttributes(attribute.String(AttrStatus, e.Status), attribute.Int(AttrInputTokens, e.TokensIn), attribute.Int(AttrOutputTokens, e.TokensOut))
	if r.guardTrips > 0 {
		r.run.SetAttributes(attribute.Int(AttrGuardrailTrips, r.guardTrips))
	}
	if e.Status == string(trace.RunFailed) || e.Status == string(trace.RunCancelled) {
		s.status(r.run, e.ErrorClass, s.failure(e))
	}
	r.run.End(oteltrace.WithTimestamp(e.Time))
}

// failure is e's error message, redacted; "" when e holds none.
func (s *Sink) failure(e *trace.Event) string {
	if e.Error == "" && e.Status != string(trace.StepFailed) && e.Status != "failed" {
		return ""
	}
	if e.Error == "" {
		return e.Status
	}
	return s.str(e.Error)
}

// status marks span failed with msg (error.type: the class) when msg is
// set.
func (s *Sink) status(span oteltrace.Span, class, msg string) {
	if msg == "" {
		return
	}
	if class == "" {
		class = "error"
	}
	span.SetAttributes(attribute.String(AttrErrorType, class))
	span.SetStatus(codes.Error, msg)
}

func (s *Sink) str(v string) string { return s.opts.Redactor.String(v) }

// Close ends, at at, the spans of every run still open: a run this
// process stopped running without settling it (interrupted, or its
// lease lost), so its spans are exported rather than dropped.
func (s *Sink) Close(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, r := range s.runs {
		s.endRun(r, &trace.Event{RunID: id, Time: at, Status: "stopped"})
		delete(s.runs, id)
	}
}
