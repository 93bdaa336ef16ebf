package openai

import (
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/reinhq/rein/model"
)

// params builds the chat completion request for req, asking name.
func (m *Model) params(name string, req *model.Request) (sdk.ChatCompletionNewParams, shape, error) {
	p := sdk.ChatCompletionNewParams{
		Model:    shared.ChatModel(name),
		Messages: make([]sdk.ChatCompletionMessageParamUnion, 0, len(req.Messages)),
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case model.System:
			p.Messages = append(p.Messages, sdk.SystemMessage(msg.Content))
		case model.User:
			p.Messages = append(p.Messages, sdk.UserMessage(msg.Content))
		case model.Assistant:
			p.Messages = append(p.Messages, assistantMessage(&req.Messages[i]))
		case model.Tool:
			p.Messages = append(p.Messages, sdk.ToolMessage(msg.Content, msg.ToolCallID))
		default:
			return p, shape{}, fmt.Errorf("openai: messages[%d]: role %q is not system, user, assistant or tool", i, msg.Role)
		}
	}
	if err := toolParams(&p, req); err != nil {
		return p, shape{}, fmt.Errorf("openai: %w", err)
	}
	if n := int64(m.cfg.MaxTokens); n > 0 {
		if m.official {
			p.MaxCompletionTokens = sdk.Int(n)
		} else {
			p.MaxTokens = sdk.Int(n)
		}
	}
	if len(req.Schema) == 0 || m.cfg.Structured == NoFormat {
		return p, shape{}, nil
	}
	ps, err := m.prepared(req.Schema)
	if err != nil {
		return p, shape{}, fmt.Errorf("openai: %w", err)
	}
	if ps == nil {
		return p, shape{}, nil
	}
	send, sh := ps.send, ps.shape
	switch m.cfg.Structured {
	case JSONSchema:
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: formatName(req.StepID), Schema: send}
		if sh.strict {
			js.Strict = sdk.Bool(true)
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js},
		}
		return p, sh, nil
	default: // JSONObject
		// JSON mode promises an object: a schema whose root is not one
		// travels in the prompt only.
		if sh.wrapped {
			return p, shape{}, nil
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONObject: &shared.ResponseFormatJSONObjectParam{},
		}
		return p, shape{}, nil
	}
}

// preparedSchema is a request schema ready to send.
type preparedSchema struct {
	send  json.RawMessage
	shape shape
}

// prepared returns raw prepared for the configured mode, from the cache
// when it was seen before; nil when there is nothing to send.
func (m *Model) prepared(raw json.RawMessage) (*preparedSchema, error) {
	return m.schemas.Get(raw, func(raw json.RawMessage) (*preparedSchema, error) {
		send, sh, ok, err := prepareSchema(raw, m.cfg.Structured == JSONSchema)
		if err != nil || !ok {
			return nil, err
		}
		b, err := json.Marshal(send)
		if err != nil {
			return nil, err
		}
		return &preparedSchema{send: b, shape: sh}, nil
	})
}

// formatName is a json_schema name from the step id: [a-zA-Z0-9_-]{1,64},
// "answer" when nothing is left.
func formatName(step string) string {
	b := make([]byte, 0, min(len(step), 64))
	for i := 0; i < len(step) && len(b) < 64; i++ {
		c := step[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b = append(b, c)
		default:
			b = append(b, '_')
		}
	}
	if len(b) == 0 {
		return "answer"
	}
	return string(b)
}
