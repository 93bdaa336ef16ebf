package otel

import "github.com/reinhq/rein/trace/genai"

// The attribute names and values the sink sets (package genai's, the
// GenAI semantic conventions and rein's own), under the sink's names.
const (
	AttrOperationName = genai.OperationName
	AttrProviderName  = genai.ProviderName
	AttrRequestModel  = genai.RequestModel
	AttrResponseModel = genai.ResponseModel
	AttrInputTokens   = genai.InputTokens
	AttrOutputTokens  = genai.OutputTokens
	AttrAgentName     = genai.AgentName
	AttrWorkflowName  = genai.WorkflowName
	AttrToolName      = genai.ToolName
	AttrToolCallID    = genai.ToolCallID
	AttrToolType      = genai.ToolType
	AttrErrorType     = genai.ErrorType

	AttrRunID    = genai.RunID
	AttrStepID   = genai.StepID
	AttrStepType = genai.StepType
	AttrAttempt  = genai.Attempt
	AttrTurn     = genai.Turn
	AttrDecision = genai.Decision
	AttrStatus   = genai.Status
	AttrCallKey  = genai.CallKey

	EventGuardrailTripped = genai.GuardrailTripped
	AttrGuardrailName     = genai.GuardrailName
	AttrGuardrailKind     = genai.GuardrailKind
	AttrGuardrailSide     = genai.GuardrailSide
	AttrGuardrailTrips    = genai.GuardrailTrips

	OpInvokeWorkflow = genai.OpInvokeWorkflow
	OpInvokeAgent    = genai.OpInvokeAgent
	OpChat           = genai.OpChat
	OpExecuteTool    = genai.OpExecuteTool
)
