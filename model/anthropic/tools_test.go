package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/anthropic"
	"github.com/reinhq/rein/model/modeltest"
)

func toolAsk() *model.Request {
	req := ask("claude")
	req.Tools = modeltest.Tools
	return req
}

// A request with tools of its own keeps its schema in the prompt: no
// forced answer tool competes with them, and a text reply is the answer.
func TestToolsWithSchemaSendNoAnswerTool(t *testing.T) {
	t.Parallel()
	c := cannedMessage(t, "end_turn", textBlock(`{"route":"account","reason":"r"}`))
	req := toolAsk()
	req.Schema = modeltest.Schema
	resp, err := newCanned(t, c, anthropic.Config{}).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"route":"account","reason":"r"}` {
		t.Errorf("Text %q, want the text answer", resp.Text)
	}
	var sent sentRequest
	if err := json.Unmarshal(c.sent, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Tools) != len(modeltest.Tools) || sent.ToolChoice != nil {
		t.Errorf("tools %+v tool_choice %+v, want the request's tools only and no forced choice", sent.Tools, sent.ToolChoice)
	}
}

// A user message after tool results joins their user turn, after them.
func TestUserAfterToolResultsJoinsTheTurn(t *testing.T) {
	t.Parallel()
	c := cannedMessage(t, "end_turn", textBlock("ok"))
	req := toolAsk()
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "t1", Name: "get_time"}}},
		model.Message{Role: model.Tool, ToolCallID: "t1", Content: "22:00Z"},
		model.Message{Role: model.User, Content: "and tomorrow?"})
	if _, err := newCanned(t, c, anthropic.Config{}).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var sent sentRequest
	if err := json.Unmarshal(c.sent, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Messages) != 3 {
		t.Fatalf("%d messages, want 3: %s", len(sent.Messages), c.sent)
	}
	last := sent.Messages[2].Content
	if len(last) != 2 || last[0].Type != "tool_result" || last[1].Type != "text" || last[1].Text != "and tomorrow?" {
		t.Errorf("last turn %+v, want the tool_result then the text", last)
	}
	if in := sent.Messages[1].Content[0]; in.Type != "tool_use" || string(in.Input) != "{}" {
		t.Errorf("tool_use %+v, want input {} for a call without arguments", in)
	}
}

func TestToolCallArgsNotAnObject(t *testing.T) {
	t.Parallel()
	c := cannedMessage(t, "end_turn", textBlock("ok"))
	req := toolAsk()
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "t1", Name: "get_weather", Args: `{"city": "Par`}}},
		model.Message{Role: model.Tool, ToolCallID: "t1", Content: "arguments are not JSON", IsError: true})
	_, err := newCanned(t, c, anthropic.Config{}).Generate(context.Background(), req)
	if fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "messages[1].tool_calls[0] (get_weather): the arguments are not a JSON object") {
		t.Errorf("error %v, want a located business error", err)
	}
	if c.sent != nil {
		t.Errorf("a request was sent: %s", c.sent)
	}
}

// Malformed replies are errors, never panics.
func TestMalformedToolReplies(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"content not a list": `{"type":"message","role":"assistant","model":"m","content":{"type":"tool_use"},"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`,
		"input not JSON":     `{"type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"a","name":"x","input":{"a":}}],"stop_reason":"tool_use"}`,
		"duplicate ids":      `{"type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"a","name":"x","input":{}},{"type":"tool_use","id":"a","name":"y","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`,
	} {
		c := &canned{status: 200, body: []byte(body)}
		_, err := newCanned(t, c, anthropic.Config{}).Generate(context.Background(), toolAsk())
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Without ids, calls get ids by position.
	c := cannedMessage(t, "tool_use", map[string]any{"type": "tool_use", "name": "get_time", "input": map[string]any{}})
	resp, err := newCanned(t, c, anthropic.Config{}).Generate(context.Background(), toolAsk())
	if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_0" {
		t.Errorf("call without id: %+v, %v; want id call_0", resp, err)
	}
}
