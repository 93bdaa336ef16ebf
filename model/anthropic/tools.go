package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

// turns maps the conversation (all but the system messages) to Messages
// API turns. An assistant message's tool calls become tool_use blocks
// after its text; tool results become tool_result blocks of one user turn
// (the API wants every result of a turn's calls in the next user message),
// and a user message right after them joins that turn as a text block.
func turns(p *sdk.MessageNewParams, msgs []model.Message) error {
	results := -1 // index in p.Messages of the user turn holding tool results
	for i := range msgs {
		msg := &msgs[i]
		switch msg.Role {
		case model.System:
			p.System = append(p.System, sdk.TextBlockParam{Text: msg.Content})
			continue
		case model.User:
			if results >= 0 {
				p.Messages[results].OfUser.Content = append(p.Messages[results].OfUser.Content, sdk.NewTextBlock(msg.Content))
			} else {
				p.Messages = append(p.Messages, sdk.NewUserMessage(sdk.NewTextBlock(msg.Content)))
			}
		case model.Assistant:
			blocks, err := assistantBlocks(i, msg)
			if err != nil {
				return err
			}
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		case model.Tool:
			block := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			if msg.Content != "" {
				block.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Content}}}
			}
			if msg.IsError {
				block.IsError = sdk.Bool(true)
			}
			if results < 0 {
				p.Messages = append(p.Messages, sdk.NewUserMessage())
				results = len(p.Messages) - 1
			}
			p.Messages[results].OfUser.Content = append(p.Messages[results].OfUser.Content, sdk.ContentBlockParamUnion{OfToolResult: &block})
			continue
		default:
			return fmt.Errorf("anthropic: messages[%d]: role %q is not system, user, assistant or tool", i, msg.Role)
		}
		results = -1
	}
	return nil
}

// assistantBlocks is an assistant turn's content: its text (always, when it
// has no tool calls), then one tool_use block per call, whose input must be
// a JSON object ("" stands for {}).
func assistantBlocks(i int, msg *model.Message) ([]sdk.ContentBlockParamUnion, error) {
	if len(msg.ToolCalls) == 0 {
		return []sdk.ContentBlockParamUnion{sdk.NewTextBlock(msg.Content)}, nil
	}
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(msg.ToolCalls)+1)
	if msg.Content != "" {
		blocks = append(blocks, sdk.NewTextBlock(msg.Content))
	}
	for j, tc := range msg.ToolCalls {
		input := json.RawMessage(bytes.TrimSpace([]byte(tc.Args)))
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		if input[0] != '{' || !json.Valid(input) {
			return nil, fmt.Errorf("anthropic: messages[%d].tool_calls[%d] (%s): the arguments are not a JSON object, and the Messages API takes a tool_use input only as one: send the call back with a JSON object (e.g. {}) as its arguments", i, j, tc.Name)
		}
		blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, input, tc.Name))
	}
	return blocks, nil
}

// toolParams sets tools and tool_choice from req; nothing for a request
// without tools.
func toolParams(p *sdk.MessageNewParams, req *model.Request) error {
	if len(req.Tools) == 0 {
		return nil
	}
	p.Tools = make([]sdk.ToolUnionParam, len(req.Tools))
	for i, t := range req.Tools {
		input, err := toolInput(t.Schema)
		if err != nil {
			return fmt.Errorf("anthropic: tools[%d] (%s): %w", i, t.Name, err)
		}
		tool := sdk.ToolParam{Name: t.Name, InputSchema: input}
		if t.Description != "" {
			tool.Description = sdk.String(t.Description)
		}
		p.Tools[i] = sdk.ToolUnionParam{OfTool: &tool}
	}
	c := req.ToolChoice
	switch c.Mode {
	case "", model.ToolAuto:
		if c.Mode == "" && !c.NoParallel {
			return nil
		}
		p.ToolChoice.OfAuto = &sdk.ToolChoiceAutoParam{}
		if c.NoParallel {
			p.ToolChoice.OfAuto.DisableParallelToolUse = sdk.Bool(true)
		}
	case model.ToolNone:
		p.ToolChoice.OfNone = &sdk.ToolChoiceNoneParam{}
	case model.ToolRequired:
		p.ToolChoice.OfAny = &sdk.ToolChoiceAnyParam{}
		if c.NoParallel {
			p.ToolChoice.OfAny.DisableParallelToolUse = sdk.Bool(true)
		}
	case model.ToolNamed:
		p.ToolChoice = sdk.ToolChoiceParamOfTool(c.Name)
		if c.NoParallel {
			p.ToolChoice.OfTool.DisableParallelToolUse = sdk.Bool(true)
		}
	}
	return nil
}

// toolInput is a tool's argument schema as an input_schema; an absent one
// is an object without properties.
func toolInput(schema json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return sdk.ToolInputSchemaParam{Properties: map[string]any{}}, nil
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(schema, &root); err != nil {
		return sdk.ToolInputSchemaParam{}, fmt.Errorf("the arguments' schema is not a JSON object: %w", err)
	}
	return objectSchema(root)
}

// toolCalls checks the calls of a reply (model.CheckToolCalls: the bound,
// ids) as a format error.
func toolCalls(name string, calls []model.ToolCall) error {
	if err := model.CheckToolCalls(calls); err != nil {
		return fault.Errorf(fault.Format, "anthropic: %s: %v", name, err)
	}
	return nil
}
