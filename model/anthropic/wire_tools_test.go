package anthropic_test

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/reinhq/rein/model"
)

// sentBlock is a content block of a message as the adapter sent it.
type sentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"is_error"`
}

// wantBlock is a content block the Messages API wants for a message.
type wantBlock struct {
	typ, text, id, name string
	input               string
	isError             bool
}

func (w wantBlock) check(got sentBlock) error {
	ok := got.Type == w.typ
	switch w.typ {
	case "text":
		ok = ok && got.Text == w.text
	case "tool_use":
		var a, b any
		ok = ok && got.ID == w.id && got.Name == w.name &&
			json.Unmarshal(got.Input, &a) == nil && json.Unmarshal([]byte(w.input), &b) == nil && reflect.DeepEqual(a, b)
	case "tool_result":
		text := ""
		if len(got.Content) == 1 && got.Content[0].Type == "text" {
			text = got.Content[0].Text
		}
		ok = ok && got.ToolUseID == w.id && text == w.text && got.IsError == w.isError && len(got.Content) <= 1
	}
	if !ok {
		return fmt.Errorf("%+v, want %+v", got, w)
	}
	return nil
}

type wantTurn struct {
	role   string
	blocks []wantBlock
}

// wantTurns is how the Messages API carries a conversation: an assistant's
// text, then a tool_use block per call; every tool result of a row in one
// user turn of tool_result blocks, a user message right after them joining
// that turn as text.
func wantTurns(msgs []model.Message) []wantTurn {
	var out []wantTurn
	results := false
	for _, m := range msgs {
		switch m.Role {
		case model.User:
			if results {
				out[len(out)-1].blocks = append(out[len(out)-1].blocks, wantBlock{typ: "text", text: m.Content})
			} else {
				out = append(out, wantTurn{role: "user", blocks: []wantBlock{{typ: "text", text: m.Content}}})
			}
			results = false
		case model.Assistant:
			t := wantTurn{role: "assistant"}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				t.blocks = append(t.blocks, wantBlock{typ: "text", text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				t.blocks = append(t.blocks, wantBlock{typ: "tool_use", id: tc.ID, name: tc.Name, input: tc.Args})
			}
			out = append(out, t)
			results = false
		case model.Tool:
			b := wantBlock{typ: "tool_result", id: m.ToolCallID, text: m.Content, isError: m.IsError}
			if results {
				out[len(out)-1].blocks = append(out[len(out)-1].blocks, b)
			} else {
				out = append(out, wantTurn{role: "user", blocks: []wantBlock{b}})
			}
			results = true
		}
	}
	return out
}

// checkTools checks a request's own tools (no answer tool: a schema then
// travels in the prompt only) and its tool_choice.
func checkTools(sent sentRequest, req *model.Request) error {
	if len(sent.Tools) != len(req.Tools) {
		return fmt.Errorf("%d tools, want %d (and no answer tool beside them)", len(sent.Tools), len(req.Tools))
	}
	for i, t := range req.Tools {
		got := sent.Tools[i]
		want := map[string]any{"type": "object", "properties": map[string]any{}}
		if t.Schema != nil {
			if err := json.Unmarshal(t.Schema, &want); err != nil {
				return err
			}
		}
		if got.Name != t.Name || got.Description != t.Description || !reflect.DeepEqual(got.InputSchema, want) {
			return fmt.Errorf("tools[%d] = %+v, want %s (%q) with input_schema %v", i, got, t.Name, t.Description, want)
		}
	}
	c := req.ToolChoice
	typ := map[model.ToolChoiceMode]string{model.ToolAuto: "auto", model.ToolNone: "none", model.ToolRequired: "any", model.ToolNamed: "tool"}[c.Mode]
	if c.Mode == "" && c.NoParallel {
		typ = "auto"
	}
	tc := sent.ToolChoice
	switch {
	case typ == "" && tc != nil:
		return fmt.Errorf("tool_choice %+v sent for the default choice", *tc)
	case typ == "":
		return nil
	case tc == nil:
		return fmt.Errorf("no tool_choice, want type %s", typ)
	case tc.Type != typ || tc.Name != c.Name || tc.DisableParallelToolUse != c.NoParallel:
		return fmt.Errorf("tool_choice %+v, want type %s name %q disable_parallel_tool_use %v", *tc, typ, c.Name, c.NoParallel)
	}
	return nil
}
