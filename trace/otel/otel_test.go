package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/genai"
	reinotel "github.com/reinhq/rein/trace/otel"
)

const secret = "sk-abcdefghijklmnopqrstuvwx0123"

// a flow with a tool step, then an agent step whose model calls a tool
// (turn 1) and answers (turn 2).
const twoSteps = `name: orders
steps:
  - {id: fetch, tool: echo, args: {order: "1042"}}
  - id: helper
    type: agent
    model: openai/gpt-4o-mini
    instructions: help
    prompt_template: "look at {fetch.order}"
    tools: {echo: }
`

const failing = `name: broken
steps:
  - {id: pay, tool: fail, args: {order: "1"}, retries: 0}
`

func registry(t *testing.T) *tool.Registry {
	reg := &tool.Registry{}
	schema := json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}}}`)
	for _, tl := range []tool.Tool{
		tool.Func(tool.Spec{Name: "echo", Effect: tool.EffectRead, Idempotent: true, InputSchema: schema}, func(_ context.Context, args any) (any, error) { return args, nil }),
		tool.Func(tool.Spec{Name: "fail", Effect: tool.EffectRead, Idempotent: true, InputSchema: schema}, func(context.Context, any) (any, error) {
			return nil, fault.BusinessErr(errors.New("card declined for key " + secret))
		}),
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func agentModel() model.Model {
	return model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Turn == 1 {
			return &model.Response{ToolCalls: []model.ToolCall{{ID: "call_7", Name: "echo", Args: `{"order":"1042"}`}}, Usage: model.Usage{In: 11, Out: 3}}, nil
		}
		return &model.Response{Text: "order 1042 is fine", Usage: model.Usage{In: 20, Out: 5}}, nil
	})
}

func run(t *testing.T, sink trace.Sink, src string) *engine.Result {
	t.Helper()
	reg := registry(t)
	models := &model.Registry{}
	models.SetFallback(agentModel())
	f, err := flow.Parse([]byte(src), "f.yaml", &flow.Options{
		Tools: func(name string) (tool.Spec, bool) {
			tl, ok := reg.Lookup(name)
			if !ok {
				return tool.Spec{}, false
			}
			return tl.Spec(), true
		},
		Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.New(engine.Config{Tools: reg, Models: models, Sink: sink}).Run(context.Background(), f, map[string]any{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tree renders the ended spans as "parent > name" lines, sorted, with
// the attributes asked for.
func tree(spans []sdktrace.ReadOnlySpan, keys ...string) []string {
	names := map[string]string{}
	for _, s := range spans {
		names[s.SpanContext().SpanID().String()] = s.Name()
	}
	var out []string
	for _, s := range spans {
		line := names[s.Parent().SpanID().String()] + " > " + s.Name()
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		for _, k := range keys {
			if v, ok := attrs[attribute.Key(k)]; ok {
				line += fmt.Sprintf(" %s=%s", k, v.String())
			}
		}
		if s.Status().Code == codes.Error {
			line += " ERROR"
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// The span tree of a flow with a tool step and an agent step whose model
// calls a tool, with the GenAI attributes, checked with the SDK's span
// recorder.
func TestSpanTree(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	res := run(t, reinotel.New(tp, nil), twoSteps)
	if res.Status != trace.RunSucceeded {
		t.Fatalf("run %+v", res)
	}
	got := tree(rec.Ended(), reinotel.AttrOperationName, reinotel.AttrRequestModel, reinotel.AttrProviderName,
		reinotel.AttrInputTokens, reinotel.AttrOutputTokens, reinotel.AttrToolName, reinotel.AttrToolCallID, reinotel.AttrAgentName)
	want := []string{
		" > invoke_workflow orders gen_ai.operation.name=invoke_workflow gen_ai.usage.input_tokens=31 gen_ai.usage.output_tokens=8",
		"invoke_agent helper > chat openai/gpt-4o-mini gen_ai.operation.name=chat gen_ai.request.model=openai/gpt-4o-mini gen_ai.provider.name=openai gen_ai.usage.input_tokens=11 gen_ai.usage.output_tokens=3",
		"invoke_agent helper > chat openai/gpt-4o-mini gen_ai.operation.name=chat gen_ai.request.model=openai/gpt-4o-mini gen_ai.provider.name=openai gen_ai.usage.input_tokens=20 gen_ai.usage.output_tokens=5",
		"invoke_agent helper > execute_tool echo gen_ai.operation.name=execute_tool gen_ai.tool.name=echo gen_ai.tool.call.id=call_7",
		"invoke_workflow orders > invoke_agent helper gen_ai.operation.name=invoke_agent gen_ai.request.model=openai/gpt-4o-mini gen_ai.agent.name=helper",
		"invoke_workflow orders > step fetch",
		"step fetch > execute_tool echo gen_ai.operation.name=execute_tool gen_ai.tool.name=echo gen_ai.tool.call.id=" + res.RunID + "/fetch/1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("span tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() != rec.Ended()[0].SpanContext().TraceID() {
			t.Fatal("the run's spans are in more than one trace")
		}
		if !s.StartTime().Before(s.EndTime()) && s.StartTime() != s.EndTime() {
			t.Errorf("span %s ends before it starts", s.Name())
		}
	}
}

// A failed step and run carry the error as their status, with the class
// as error.type, and a secret in the message does not reach a span.
func TestSpanErrorsAreRedacted(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	res := run(t, reinotel.New(tp, &reinotel.Options{Redactor: redact.New(secret)}), failing)
	if res.Status != trace.RunFailed {
		t.Fatalf("run %+v", res)
	}
	got := tree(exp.GetSpans().Snapshots(), reinotel.AttrErrorType)
	want := []string{" > invoke_workflow broken error.type=business ERROR", "invoke_workflow broken > step pay error.type=business ERROR",
		"step pay > execute_tool fail error.type=business ERROR"}
	if !slices.Equal(got, want) {
		t.Fatalf("span tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range exp.GetSpans() {
		all := s.Status.Description + fmt.Sprint(s.Attributes)
		if strings.Contains(all, secret[:12]) {
			t.Fatalf("span %s holds the secret: %s", s.Name, all)
		}
		if s.Status.Code == codes.Error && !strings.Contains(s.Status.Description, "card declined") {
			t.Errorf("span %s: status %q does not say what failed", s.Name, s.Status.Description)
		}
	}
}

// An Options.Provider names the providers it knows, and "" leaves a
// model to the default (the part before the slash, else "rein").
func TestProviderOption(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	calls := 0
	own := func(string) string {
		calls++
		return ""
	}
	if res := run(t, reinotel.New(tp, &reinotel.Options{Provider: own}), twoSteps); res.Status != trace.RunSucceeded {
		t.Fatalf("run %+v", res)
	}
	mapped := func(model string) string {
		return genai.ProviderOf("ollama", "openai") + "-" + strings.Split(model, "/")[1]
	}
	if res := run(t, reinotel.New(tp, &reinotel.Options{Provider: mapped}), twoSteps); res.Status != trace.RunSucceeded {
		t.Fatalf("run %+v", res)
	}
	var got []string
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if string(kv.Key) == reinotel.AttrProviderName {
				got = append(got, kv.Value.AsString())
			}
		}
	}
	want := []string{"openai", "openai", "openai-gpt-4o-mini", "openai-gpt-4o-mini"}
	if calls != 2 || !slices.Equal(got, want) {
		t.Fatalf("provider names %q after %d calls of Provider, want %q after 2", got, calls, want)
	}
}

// A guardrail's trip is a span event on its step's span (name, kind,
// side, what it did) and the run's span counts the trips.
func TestGuardrailTripIsASpanEvent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	res := run(t, reinotel.New(tp, nil), `name: guarded
steps:
  - id: helper
    type: agent
    model: openai/gpt-4o-mini
    instructions: help
    prompt_template: "look at 1042"
    tools: {echo: }
    guardrails:
      output: [{name: no_orders, regex: 'order \d+', on_trip: stop}]
`)
	if res.Status != trace.RunFailed {
		t.Fatalf("run %+v, want the guardrail's failure", res)
	}
	var got []string
	for _, s := range rec.Ended() {
		for _, ev := range s.Events() {
			attrs := map[attribute.Key]string{}
			for _, kv := range ev.Attributes {
				attrs[kv.Key] = kv.Value.AsString()
			}
			got = append(got, fmt.Sprintf("%s: %s %s %s %s %s", s.Name(), ev.Name, attrs[reinotel.AttrGuardrailName], attrs[reinotel.AttrGuardrailKind],
				attrs[reinotel.AttrGuardrailSide], attrs[reinotel.AttrDecision]))
		}
		if strings.HasPrefix(s.Name(), "invoke_workflow") {
			n := -1
			for _, kv := range s.Attributes() {
				if kv.Key == reinotel.AttrGuardrailTrips {
					n = int(kv.Value.AsInt64())
				}
			}
			if n != 1 {
				t.Errorf("run span counts %d guardrail trips, want 1", n)
			}
		}
	}
	if want := []string{"invoke_agent helper: rein.guardrail.tripped no_orders regex output stop"}; !slices.Equal(got, want) {
		t.Fatalf("span events %q, want %q", got, want)
	}
}
