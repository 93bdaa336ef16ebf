package openai_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/modeltest"
	"github.com/reinhq/rein/model/openai"
)

func toolAsk() *model.Request {
	req := ask("m")
	req.Tools = modeltest.Tools
	return req
}

func replyWithCalls(calls string) []byte {
	return []byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":` + calls + `}}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`)
}

// Compatible servers vary: calls without ids get ids by position, an
// arguments object is kept as its JSON text, null arguments are empty.
func TestCompatibleToolCalls(t *testing.T) {
	t.Parallel()
	c := &canned{status: 200, body: replyWithCalls(`[
		{"type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}},
		{"function":{"name":"get_time","arguments":null}}]`)}
	m, _ := openai.New(openai.Config{BaseURL: "http://localhost:11434/v1", HTTPClient: &http.Client{Transport: c}})
	resp, err := m.Generate(context.Background(), toolAsk())
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{{ID: "call_0", Name: "get_weather", Args: `{"city":"Paris"}`}, {ID: "call_1", Name: "get_time"}}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0] != want[0] || resp.ToolCalls[1] != want[1] {
		t.Errorf("calls %+v, want %+v", resp.ToolCalls, want)
	}
}

// Malformed replies are errors, never panics.
func TestMalformedToolReplies(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		body  []byte
		class fault.Class
	}{
		"tool_calls not a list": {replyWithCalls(`"get_weather"`), ""},
		"arguments a number":    {replyWithCalls(`[{"id":"a","type":"function","function":{"name":"x","arguments":42}}]`), "ok"},
		"custom tool":           {replyWithCalls(`[{"id":"a","type":"custom","custom":{"name":"x","input":"y"}}]`), fault.Format},
		"duplicate ids":         {replyWithCalls(`[{"id":"a","function":{"name":"x"}},{"id":"a","function":{"name":"y"}}]`), fault.Format},
		"function not object":   {replyWithCalls(`[{"id":"a","function":"x"}]`), ""},
	} {
		m, _ := openai.New(openai.Config{HTTPClient: &http.Client{Transport: &canned{status: 200, body: tc.body}}})
		resp, err := m.Generate(context.Background(), toolAsk())
		switch tc.class {
		case "ok":
			if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Args != "42" {
				t.Errorf("%s: %+v %v, want the arguments' text passed through", name, resp, err)
			}
		case "":
			if err == nil {
				t.Errorf("%s: accepted", name)
			}
		default:
			if fault.ClassOf(err) != tc.class {
				t.Errorf("%s: %v (%s), want %s", name, err, fault.ClassOf(err), tc.class)
			}
			if resp == nil || resp.Usage != (model.Usage{In: 7, Out: 3}) {
				t.Errorf("%s: response %+v, want the usage beside the error", name, resp)
			}
		}
	}
}
