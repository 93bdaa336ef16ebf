package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/trace/genai"
)

// tracerName is the instrumentation scope of the tools/call spans.
const tracerName = "github.com/reinhq/rein/tool/mcp"

// startCall starts the client span of a tools/call of tool on server,
// from the process's global tracer provider (a no-op unless a program set
// one, as rein does with OTEL_EXPORTER_OTLP_ENDPOINT), and returns the
// request's _meta carrying its trace context (W3C traceparent, from the
// global propagator), nil when there is none to send.
func startCall(ctx context.Context, server, tool string) (context.Context, oteltrace.Span, sdk.Meta) {
	ctx, span := otel.Tracer(tracerName).Start(ctx, genai.MCPToolsCall+" "+tool, oteltrace.WithSpanKind(oteltrace.SpanKindClient),
		oteltrace.WithAttributes(attribute.String(genai.MCPMethodName, genai.MCPToolsCall), attribute.String(genai.OperationName, genai.OpExecuteTool),
			attribute.String(genai.ToolName, tool), attribute.String(genai.MCPServer, server)))
	carrier := genai.MetaCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	if len(carrier) == 0 {
		return ctx, span, nil
	}
	return ctx, span, sdk.Meta(carrier)
}

// endCall ends span with err as its status (redacted).
func endCall(span oteltrace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, redact.Process().Message(err.Error()))
	}
	span.End()
}
