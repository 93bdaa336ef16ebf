package model_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reinhq/rein/model"
)

var weatherTool = model.ToolDef{Name: "get_weather", Description: "Current weather", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}

func TestCheckRequestAccepts(t *testing.T) {
	t.Parallel()
	for name, req := range map[string]*model.Request{
		"no tools":   {Messages: []model.Message{{Role: model.User, Content: "hi"}}},
		"auto":       {Tools: []model.ToolDef{weatherTool, {Name: "now"}}},
		"named":      {Tools: []model.ToolDef{weatherTool}, ToolChoice: model.ToolChoice{Mode: model.ToolNamed, Name: "get_weather", NoParallel: true}},
		"no type":    {Tools: []model.ToolDef{{Name: "x", Schema: json.RawMessage(`{"properties":{}}`)}}},
		"none":       {Tools: []model.ToolDef{weatherTool}, ToolChoice: model.ToolChoice{Mode: model.ToolNone}},
		"auto named": {ToolChoice: model.ToolChoice{Mode: model.ToolAuto}},
		"conversation": {Tools: []model.ToolDef{weatherTool}, Messages: []model.Message{
			{Role: model.User, Content: "weather in Paris and Rome?"},
			{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "a", Name: "get_weather", Args: `{"city":"Paris"}`}, {ID: "b", Name: "nope", Args: `{"ci`}}},
			{Role: model.Tool, ToolCallID: "b", Content: "unknown tool nope", IsError: true},
			{Role: model.Tool, ToolCallID: "a", Content: `{"temp":21}`},
		}},
	} {
		if err := model.CheckRequest(req); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCheckRequestRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  model.Request
		want []string
	}{
		{"bad names", model.Request{Tools: []model.ToolDef{{Name: ""}, {Name: "mcp.fetch"}, {Name: strings.Repeat("x", 65)}}},
			[]string{`tools[0]: name "" must be`, `tools[1]: name "mcp.fetch"`, "tools[2]: name"}},
		{"duplicate", model.Request{Tools: []model.ToolDef{weatherTool, weatherTool}}, []string{`tools[1]: name "get_weather" is also tools[0]'s`}},
		{"schema not object", model.Request{Tools: []model.ToolDef{{Name: "a", Schema: json.RawMessage(`[1]`)}, {Name: "b", Schema: json.RawMessage(`{"type":"string"}`)}}},
			[]string{"tools[0] (a): the arguments' schema is not a JSON object", `tools[1] (b): the arguments' schema has type "string"`}},
		{"named unknown", model.Request{Tools: []model.ToolDef{weatherTool}, ToolChoice: model.ToolChoice{Mode: model.ToolNamed, Name: "send"}},
			[]string{`tool_choice names tool "send", which the request does not offer (tools: get_weather)`}},
		{"required without tools", model.Request{ToolChoice: model.ToolChoice{Mode: model.ToolRequired}}, []string{"tool_choice required needs tools"}},
		{"bad mode", model.Request{Tools: []model.ToolDef{weatherTool}, ToolChoice: model.ToolChoice{Mode: "any"}}, []string{`tool_choice mode "any" is not auto`}},
		{"name without mode", model.Request{Tools: []model.ToolDef{weatherTool}, ToolChoice: model.ToolChoice{Name: "get_weather"}}, []string{"say mode tool"}},
		{"messages", model.Request{Messages: []model.Message{
			{Role: model.User, ToolCalls: []model.ToolCall{{ID: "x", Name: "n"}}},
			{Role: model.Assistant, ToolCalls: []model.ToolCall{{Name: "n"}, {ID: "y"}}},
			{Role: model.Tool, Content: "r"},
			{Role: model.Tool, ToolCallID: "zzz", Content: "r"},
			{Role: model.User, ToolCallID: "y", IsError: true},
		}}, []string{
			"messages[0]: only assistant messages carry tool calls, this one is user",
			"messages[1].tool_calls[0]: the call has no id",
			"messages[1].tool_calls[1]: the call names no tool",
			"messages[2]: a tool message needs the tool_call_id",
			`messages[3]: tool result for call "zzz", which no earlier assistant message asked for`,
			"messages[4]: tool_call_id belongs to tool messages",
			"messages[4]: is_error belongs to tool messages",
		}},
	}
	for _, tt := range tests {
		err := model.CheckRequest(&tt.req)
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tt.name, err, w)
			}
		}
	}
}

func TestCheckToolCalls(t *testing.T) {
	t.Parallel()
	calls := []model.ToolCall{{Name: "a"}, {ID: "x", Name: "b"}, {Name: "c"}}
	if err := model.CheckToolCalls(calls); err != nil {
		t.Fatal(err)
	}
	if calls[0].ID != "call_0" || calls[1].ID != "x" || calls[2].ID != "call_2" {
		t.Errorf("ids %q %q %q, want call_0 x call_2 (missing ids filled by position)", calls[0].ID, calls[1].ID, calls[2].ID)
	}
	if err := model.CheckToolCalls([]model.ToolCall{{ID: "a", Name: "n"}, {ID: "b"}}); err == nil || !strings.Contains(err.Error(), "tool_calls[1] names no tool") {
		t.Errorf("a call without a name: %v", err)
	}
	if err := model.CheckToolCalls([]model.ToolCall{{ID: "a", Name: "n"}, {ID: "b", Name: "n"}, {ID: "a", Name: "n"}}); err == nil || !strings.Contains(err.Error(), `tool_calls[2] repeats the id "a" of tool_calls[0]`) {
		t.Errorf("duplicate ids: %v", err)
	}
	many := make([]model.ToolCall, 10000)
	for i := range many {
		many[i].Name = "n"
	}
	if err := model.CheckToolCalls(many); err == nil || !strings.Contains(err.Error(), "10000 tool calls; at most 128") {
		t.Errorf("10000 calls: %v", err)
	}
	if err := model.CheckToolCalls(many[:model.MaxToolCalls]); err != nil {
		t.Errorf("MaxToolCalls calls: %v", err)
	}
}

func TestPromptIncludesToolResults(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{
		{Role: model.System, Content: "sys"},
		{Role: model.User, Content: "q"},
		{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "1", Name: "t"}}},
		{Role: model.Tool, ToolCallID: "1", Content: "obs"},
	}}
	if got := req.Prompt(); got != "q\nobs" {
		t.Errorf("Prompt %q, want the user turn and the observation", got)
	}
}

// A request without tools costs the adapters nothing to check.
func TestCheckRequestAllocatesNothingWithoutTools(t *testing.T) {
	req := &model.Request{Messages: []model.Message{{Role: model.System, Content: "s"}, {Role: model.User, Content: "q"}, {Role: model.Assistant, Content: "a"}}}
	if n := testing.AllocsPerRun(100, func() { _ = model.CheckRequest(req) }); n != 0 {
		t.Errorf("CheckRequest allocates %v times per plain request, want 0", n)
	}
}
