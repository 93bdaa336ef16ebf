package otel

// The attribute names and values of the OpenTelemetry semantic conventions
// for generative AI (gen_ai.*, https://opentelemetry.io/docs/specs/semconv/gen-ai/)
// that the sink sets, defined here: the Go semconv packages after v1.41.0
// no longer carry the gen_ai names.
const (
	AttrOperationName = "gen_ai.operation.name"
	AttrProviderName  = "gen_ai.provider.name"
	AttrRequestModel  = "gen_ai.request.model"
	AttrResponseModel = "gen_ai.response.model"
	AttrInputTokens   = "gen_ai.usage.input_tokens"
	AttrOutputTokens  = "gen_ai.usage.output_tokens"
	AttrAgentName     = "gen_ai.agent.name"
	AttrWorkflowName  = "gen_ai.workflow.name"
	AttrToolName      = "gen_ai.tool.name"
	AttrToolCallID    = "gen_ai.tool.call.id"
	AttrToolType      = "gen_ai.tool.type"
	AttrErrorType     = "error.type"

	// rein's own, beside them.
	AttrRunID    = "rein.run.id"
	AttrStepID   = "rein.step.id"
	AttrStepType = "rein.step.type"
	AttrAttempt  = "rein.attempt"
	AttrTurn     = "rein.agent.turn"
	AttrDecision = "rein.decision"
	AttrStatus   = "rein.status"
	AttrCallKey  = "rein.call.key"
)

// gen_ai.operation.name values.
const (
	OpInvokeWorkflow = "invoke_workflow"
	OpInvokeAgent    = "invoke_agent"
	OpChat           = "chat"
	OpExecuteTool    = "execute_tool"
)
