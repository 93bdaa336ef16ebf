package mcp_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/tool"
	mcptool "github.com/reinhq/rein/tool/mcp"
)

// TestToolsCallCarriesTheTrace: rein's MCP client sends a tools/call in a
// client span "tools/call sum" with the W3C trace context in
// params._meta, and rein's MCP server continues that trace with a server
// span, inside which the tool runs.
func TestToolsCallCarriesTheTrace(t *testing.T) {
	// not parallel: it sets the process's tracer provider and propagator.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	oldTP, oldProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTracerProvider(oldTP); otel.SetTextMapPropagator(oldProp) })

	var inTool oteltrace.SpanContext
	sum := tool.Typed(tool.Spec{Name: "sum", Effect: tool.EffectNone},
		func(ctx context.Context, in sumIn) (map[string]float64, error) {
			inTool = oteltrace.SpanContextFromContext(ctx)
			return map[string]float64{"sum": in.A + in.B}, nil
		})
	srv, err := mcp.New(context.Background(), nil, &mcp.Options{Tools: []tool.Tool{sum}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	c, err := mcptool.Connect(context.Background(), &flow.MCPDecl{Name: "calc", URL: hs.URL, File: "rein.yaml",
		Tools: map[string]*flow.MCPToolDecl{"sum": {EffectDecl: flow.EffectDecl{Effect: tool.EffectNone, Idempotent: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "step")
	if _, err := c.Tools()[0].Call(ctx, map[string]any{"A": 2, "B": 3}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var client, server sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch {
		case s.Name() == "tools/call sum" && s.SpanKind() == oteltrace.SpanKindClient:
			client = s
		case s.Name() == "tools/call sum" && s.SpanKind() == oteltrace.SpanKindServer:
			server = s
		}
	}
	if client == nil || server == nil {
		t.Fatalf("spans %v: want a client and a server span tools/call sum", rec.Ended())
	}
	trace := parent.SpanContext().TraceID()
	if client.Parent().SpanID() != parent.SpanContext().SpanID() || server.SpanContext().TraceID() != trace ||
		server.Parent().SpanID() != client.SpanContext().SpanID() || !server.Parent().IsRemote() {
		t.Fatalf("the server span (parent %v) does not continue the client's (%v) trace %v", server.Parent(), client.SpanContext(), trace)
	}
	if inTool.SpanID() != server.SpanContext().SpanID() {
		t.Fatalf("the tool ran in span %v, not the server span %v", inTool.SpanID(), server.SpanContext().SpanID())
	}
}
