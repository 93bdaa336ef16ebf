package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/trace/genai"
)

// tracerName is the instrumentation scope of the served tools/call spans.
const tracerName = "github.com/reinhq/rein/server/mcp"

// startCall continues the trace a tools/call request carries in its
// params._meta (W3C traceparent, read by the process's global
// propagator) with a server span "tools/call {tool}" from the global
// tracer provider (both no-ops unless the program set them, as rein does
// with OTEL_EXPORTER_OTLP_ENDPOINT). The call, and the runs it starts,
// are in that span.
func startCall(ctx context.Context, meta sdk.Meta, tool string) (context.Context, oteltrace.Span) {
	if len(meta) > 0 {
		ctx = otel.GetTextMapPropagator().Extract(ctx, genai.MetaCarrier(meta))
	}
	return otel.Tracer(tracerName).Start(ctx, genai.MCPToolsCall+" "+tool, oteltrace.WithSpanKind(oteltrace.SpanKindServer),
		oteltrace.WithAttributes(attribute.String(genai.MCPMethodName, genai.MCPToolsCall), attribute.String(genai.OperationName, genai.OpExecuteTool),
			attribute.String(genai.ToolName, tool)))
}

// endCall ends span, failed when res is an error result (its text is
// already redacted).
func endCall(span oteltrace.Span, res *sdk.CallToolResult) {
	if res != nil && res.IsError {
		msg := "the tool call failed"
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*sdk.TextContent); ok {
				msg = tc.Text
			}
		}
		span.SetAttributes(attribute.String(genai.ErrorType, "tool_error"))
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}
