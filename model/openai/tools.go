package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

// assistantMessage maps an assistant turn; one with tool calls carries
// them as tool_calls (content omitted when empty, as the API allows).
func assistantMessage(msg *model.Message) sdk.ChatCompletionMessageParamUnion {
	if len(msg.ToolCalls) == 0 {
		return sdk.AssistantMessage(msg.Content)
	}
	a := sdk.ChatCompletionAssistantMessageParam{
		ToolCalls: make([]sdk.ChatCompletionMessageToolCallUnionParam, len(msg.ToolCalls)),
	}
	if msg.Content != "" {
		a.Content.OfString = sdk.String(msg.Content)
	}
	for i, tc := range msg.ToolCalls {
		a.ToolCalls[i] = sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
			ID:       tc.ID,
			Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Args},
		}}
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// toolParams sets tools, tool_choice and parallel_tool_calls from req.
// Nothing is sent for a request without tools. Argument schemas are sent
// as given (not strict): the caller validates the arguments.
func toolParams(p *sdk.ChatCompletionNewParams, req *model.Request) error {
	if len(req.Tools) == 0 {
		return nil
	}
	p.Tools = make([]sdk.ChatCompletionToolUnionParam, len(req.Tools))
	for i, t := range req.Tools {
		params, err := functionParameters(t.Schema)
		if err != nil {
			return fmt.Errorf("tools[%d] (%s): %w", i, t.Name, err)
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		p.Tools[i] = sdk.ChatCompletionFunctionTool(def)
	}
	c := req.ToolChoice
	switch c.Mode {
	case model.ToolAuto, model.ToolNone, model.ToolRequired:
		p.ToolChoice.OfAuto = sdk.String(string(c.Mode))
	case model.ToolNamed:
		p.ToolChoice = sdk.ToolChoiceOptionFunctionToolChoice(sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: c.Name})
	}
	if c.NoParallel {
		p.ParallelToolCalls = sdk.Bool(false)
	}
	return nil
}

// functionParameters is a tool's argument schema as the SDK takes it: the
// top-level members kept as raw JSON, "type": "object" added when absent;
// an absent schema is an object without properties.
func functionParameters(schema json.RawMessage) (shared.FunctionParameters, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("the arguments' schema is not a JSON object: %w", err)
	}
	out := make(shared.FunctionParameters, len(root)+1)
	for k, v := range root {
		out[k] = v
	}
	if _, ok := out["type"]; !ok {
		out["type"] = "object"
	}
	return out, nil
}

// toolCall is a tool call as a chat.completion message carries it.
// Arguments is a JSON string on the wire; some compatible servers send an
// object instead, kept as its JSON text.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// toolCalls maps the calls of a reply, checked by model.CheckToolCalls
// (the bound, ids). A call of a type other than function is a format
// error: only functions were offered.
func toolCalls(name string, in []toolCall) ([]model.ToolCall, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]model.ToolCall, len(in))
	for i, tc := range in {
		out[i] = model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: rawArgs(tc.Function.Arguments)}
	}
	if err := model.CheckToolCalls(out); err != nil {
		return nil, fault.Errorf(fault.Format, "openai: %s: %v", name, err)
	}
	for i, tc := range in {
		if tc.Type != "" && tc.Type != "function" {
			return nil, fault.Errorf(fault.Format, "openai: %s: tool_calls[%d] has type %q; only function tools were offered", name, i, tc.Type)
		}
	}
	return out, nil
}

// rawArgs is the arguments' text: a JSON string's value, else the JSON as
// sent ("" for null or nothing).
func rawArgs(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}
