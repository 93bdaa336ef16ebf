package openai_test

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/reinhq/rein/model"
)

// sentCall is a tool call of an assistant message as the adapter sent it.
type sentCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// checkMessage checks messages[i]: role and content; an assistant's tool
// calls as tool_calls (content absent when empty); a tool result as role
// tool with its tool_call_id.
func checkMessage(sent sentRequest, i int, m model.Message) error {
	got := sent.Messages[i]
	content := ""
	if got.Content != nil {
		content = *got.Content
	}
	if got.Role != string(m.Role) || content != m.Content {
		return fmt.Errorf("messages[%d] = %s %q, want %s %q", i, got.Role, content, m.Role, m.Content)
	}
	if got.ToolCallID != m.ToolCallID {
		return fmt.Errorf("messages[%d].tool_call_id %q, want %q", i, got.ToolCallID, m.ToolCallID)
	}
	if len(m.ToolCalls) > 0 && m.Content == "" && got.Content != nil {
		return fmt.Errorf("messages[%d] sends content %q beside its tool calls, want it absent", i, *got.Content)
	}
	if len(got.ToolCalls) != len(m.ToolCalls) {
		return fmt.Errorf("messages[%d]: %d tool_calls, want %d", i, len(got.ToolCalls), len(m.ToolCalls))
	}
	for j, tc := range m.ToolCalls {
		g := got.ToolCalls[j]
		if g.ID != tc.ID || g.Type != "function" || g.Function.Name != tc.Name || g.Function.Arguments != tc.Args {
			return fmt.Errorf("messages[%d].tool_calls[%d] = %+v, want function %s %s(%s)", i, j, g, tc.ID, tc.Name, tc.Args)
		}
	}
	return nil
}

// checkTools checks tools (function tools, parameters the schema or an
// empty object), tool_choice and parallel_tool_calls.
func checkTools(sent sentRequest, req *model.Request) error {
	if len(req.Tools) == 0 {
		if len(sent.Tools) > 0 || sent.ToolChoice != nil || sent.ParallelToolCalls != nil {
			return fmt.Errorf("tools, tool_choice or parallel_tool_calls sent for a request without tools")
		}
		return nil
	}
	if len(sent.Tools) != len(req.Tools) {
		return fmt.Errorf("%d tools, want %d", len(sent.Tools), len(req.Tools))
	}
	for i, t := range req.Tools {
		g := sent.Tools[i]
		want := map[string]any{"type": "object", "properties": map[string]any{}}
		if t.Schema != nil {
			if err := json.Unmarshal(t.Schema, &want); err != nil {
				return err
			}
		}
		if g.Type != "function" || g.Function.Name != t.Name || g.Function.Description != t.Description || !reflect.DeepEqual(g.Function.Parameters, want) {
			return fmt.Errorf("tools[%d] = %+v, want function %s (%q) with parameters %v", i, g, t.Name, t.Description, want)
		}
	}
	c := req.ToolChoice
	var want string
	switch c.Mode {
	case "":
	case model.ToolNamed:
		want = fmt.Sprintf(`{"type":"function","function":{"name":%q}}`, c.Name)
	default:
		want = fmt.Sprintf("%q", c.Mode)
	}
	if (want == "" && sent.ToolChoice != nil) || (want != "" && !jsonSame(sent.ToolChoice, want)) {
		return fmt.Errorf("tool_choice %s, want %s", sent.ToolChoice, want)
	}
	if c.NoParallel != (sent.ParallelToolCalls != nil && !*sent.ParallelToolCalls) {
		return fmt.Errorf("parallel_tool_calls %v for NoParallel %v", sent.ParallelToolCalls, c.NoParallel)
	}
	return nil
}

func jsonSame(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}
