// Package genai names the OpenTelemetry attributes and values of the
// semantic conventions for generative AI (gen_ai.*,
// https://opentelemetry.io/docs/specs/semconv/gen-ai/) and for MCP
// (mcp.*) that rein's spans carry, with rein's own beside them. They are
// defined here, as plain strings: the Go semconv packages after v1.41.0
// no longer carry the gen_ai names. The package imports nothing, so the
// MCP client and server use it without linking the OpenTelemetry SDK.
package genai

// GenAI attribute names.
const (
	OperationName = "gen_ai.operation.name"
	ProviderName  = "gen_ai.provider.name"
	RequestModel  = "gen_ai.request.model"
	ResponseModel = "gen_ai.response.model"
	InputTokens   = "gen_ai.usage.input_tokens"
	OutputTokens  = "gen_ai.usage.output_tokens"
	AgentName     = "gen_ai.agent.name"
	WorkflowName  = "gen_ai.workflow.name"
	ToolName      = "gen_ai.tool.name"
	ToolCallID    = "gen_ai.tool.call.id"
	ToolType      = "gen_ai.tool.type"
	ErrorType     = "error.type"
)

// gen_ai.operation.name values.
const (
	OpInvokeWorkflow = "invoke_workflow"
	OpInvokeAgent    = "invoke_agent"
	OpChat           = "chat"
	OpExecuteTool    = "execute_tool"
)

// MCP attribute names, and the span name of a tool call: "tools/call
// {tool}", its trace context in the request's params._meta (traceparent,
// tracestate: W3C trace context).
const (
	MCPMethodName = "mcp.method.name"
	MCPToolsCall  = "tools/call"
)

// rein's own attribute names.
const (
	RunID    = "rein.run.id"
	StepID   = "rein.step.id"
	StepType = "rein.step.type"
	Attempt  = "rein.attempt"
	Turn     = "rein.agent.turn"
	Decision = "rein.decision"
	Status   = "rein.status"
	CallKey  = "rein.call.key"
	// MCPServer is the rein.yaml mcp: name of the server a tool is on.
	MCPServer = "rein.mcp.server"
	// GuardrailTripped names the span event of a guardrail's trip (a
	// guardrail event), with the guardrail's name, kind (regex, deny,
	// schema, check, judge), side (input, output) and what it did
	// (Decision: stop or ask); GuardrailTrips counts a run's trips on its
	// invoke_workflow span.
	GuardrailTripped = "rein.guardrail.tripped"
	GuardrailName    = "rein.guardrail.name"
	GuardrailKind    = "rein.guardrail.kind"
	GuardrailSide    = "rein.guardrail.side"
	GuardrailTrips   = "rein.guardrail.trips"
)

// MetaCarrier is an MCP request's params._meta as an OpenTelemetry
// propagation.TextMapCarrier: the W3C trace context (traceparent,
// tracestate) travels in it from rein's MCP client to an MCP server.
type MetaCarrier map[string]any

// Get is the string value of key ("" when absent or not a string).
func (m MetaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

// Set sets key to value.
func (m MetaCarrier) Set(key, value string) { m[key] = value }

// Keys lists the keys, in no particular order.
func (m MetaCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ProviderOf is the gen_ai.provider.name of a model served by the
// provider named preset that speaks api (model/provider's Preset Name and
// API): preset itself when the conventions list it (openai, anthropic,
// deepseek), else api, "openai" or "anthropic" — the conventions name the
// client's API for a server that speaks it (a local OpenAI-compatible
// server is "openai").
func ProviderOf(preset, api string) string {
	switch preset {
	case "openai", "anthropic", "deepseek":
		return preset
	}
	return api
}
