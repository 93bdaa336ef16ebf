package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/model"
)

// wrapKey is the property a schema whose root is not an object is wrapped
// in: a tool's input_schema must be an object.
const wrapKey = "value"

// params builds the Messages request for req, asking name.
func (m *Model) params(name string, req *model.Request) (sdk.MessageNewParams, *preparedSchema, error) {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(name),
		MaxTokens: int64(m.cfg.MaxTokens),
		Messages:  make([]sdk.MessageParam, 0, len(req.Messages)),
	}
	if err := turns(&p, req.Messages); err != nil {
		return p, nil, err
	}
	if len(req.Messages) > 0 && len(p.Messages) == 0 {
		return p, nil, fmt.Errorf("anthropic: the request holds only system messages; the Messages API needs a user message")
	}
	if err := toolParams(&p, req); err != nil {
		return p, nil, err
	}
	// With tools of its own, a request's schema travels in the prompt only:
	// a forced answer tool would keep the model from calling them.
	if len(req.Schema) == 0 || len(req.Tools) > 0 {
		return p, nil, nil
	}
	ps, err := m.prepared(req.Schema)
	if err != nil || ps == nil {
		return p, nil, err
	}
	tool := sdk.ToolParam{
		Name:        AnswerTool,
		Description: sdk.String("Give your answer by calling this tool: its input is the answer."),
		InputSchema: ps.input,
	}
	p.Tools = []sdk.ToolUnionParam{{OfTool: &tool}}
	p.ToolChoice = sdk.ToolChoiceParamOfTool(AnswerTool)
	return p, ps, nil
}

// preparedSchema is a request schema as a tool's input_schema.
type preparedSchema struct {
	input   sdk.ToolInputSchemaParam
	wrapped bool
}

// prepared returns raw as an input schema, from the cache when it was
// seen before; nil when raw is not a schema object (true, {}).
func (m *Model) prepared(raw json.RawMessage) (*preparedSchema, error) {
	return m.schemas.Get(raw, prepareSchema)
}

func prepareSchema(raw json.RawMessage) (*preparedSchema, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(raw, &root); err != nil {
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("anthropic: request schema is not a JSON object: %w", err)
	}
	if len(root) == 0 {
		return nil, nil
	}
	ps := &preparedSchema{}
	if t := root["type"]; !bytes.Equal(bytes.TrimSpace(t), []byte(`"object"`)) {
		ps.wrapped = true
		wrapper := map[string]json.RawMessage{"additionalProperties": json.RawMessage("false")}
		// Definitions move to the new root, so "#/$defs/…" still resolves.
		for _, k := range []string{"$defs", "definitions"} {
			if d, ok := root[k]; ok {
				wrapper[k] = d
				delete(root, k)
			}
		}
		inner, err := json.Marshal(root)
		if err != nil {
			return nil, err
		}
		wrapper["properties"] = json.RawMessage(`{"` + wrapKey + `":` + string(inner) + `}`)
		wrapper["required"] = json.RawMessage(`["` + wrapKey + `"]`)
		root = wrapper
	}
	input, err := objectSchema(root)
	if err != nil {
		return nil, err
	}
	ps.input = input
	return ps, nil
}

// objectSchema is an object schema's members as an input_schema:
// properties, required, and every other member but type and $schema as
// extra fields.
func objectSchema(root map[string]json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var in sdk.ToolInputSchemaParam
	if p, ok := root["properties"]; ok {
		in.Properties = p
	}
	if r, ok := root["required"]; ok {
		if err := json.Unmarshal(r, &in.Required); err != nil {
			return in, fmt.Errorf("anthropic: request schema: required: %w", err)
		}
	}
	for k, v := range root {
		switch k {
		case "type", "properties", "required", "$schema":
			continue
		}
		if in.ExtraFields == nil {
			in.ExtraFields = make(map[string]any)
		}
		in.ExtraFields[k] = v
	}
	return in, nil
}

// unwrap returns the answer given as a tool's input, unwrapped when the
// schema was.
func (ps *preparedSchema) unwrap(input []byte) string {
	if !ps.wrapped {
		return string(input)
	}
	var w map[string]json.RawMessage
	if json.Unmarshal(input, &w) != nil || len(w) != 1 || w[wrapKey] == nil {
		return string(input)
	}
	return string(w[wrapKey])
}
