package modeltest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

// Tools are the tools the suite's tool-calling requests offer: one with an
// argument schema, one without arguments.
var Tools = []model.ToolDef{
	{
		Name:        "get_weather",
		Description: "Current weather of a city.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"],"additionalProperties":false}`),
	},
	{Name: "get_time", Description: "The current time, UTC."},
}

// toolRequest is a conversation offering Tools.
func toolRequest() *model.Request {
	req := conversation()
	req.Messages = []model.Message{
		{Role: model.System, Content: "You are a travel assistant. Use the tools."},
		{Role: model.User, Content: "What is the weather in Paris and Rome, and what time is it?"},
	}
	req.Decision = "agent"
	req.Tools = Tools
	return req
}

// toolsAnswered extends toolRequest with calls and their results: two
// parallel calls with text, one result an error.
func toolsAnswered() *model.Request {
	req := toolRequest()
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, Content: "Let me look that up.", ToolCalls: []model.ToolCall{
			{ID: "call_Paris01", Name: "get_weather", Args: `{"city":"Paris"}`},
			{ID: "call_Rome02", Name: "get_weather", Args: `{"city":"Rome","unit":"c"}`},
			{ID: "call_time03", Name: "get_time", Args: `{}`},
		}},
		model.Message{Role: model.Tool, ToolCallID: "call_Paris01", Content: `{"temp_c":21,"sky":"clear"}`},
		model.Message{Role: model.Tool, ToolCallID: "call_Rome02", Content: "weather service unavailable", IsError: true},
		model.Message{Role: model.Tool, ToolCallID: "call_time03", Content: "2026-12-04T22:00:00Z"},
	)
	return req
}

func toolCallServer(t *testing.T, p Provider, req *model.Request, r Reply) *server {
	return newServer(t, p, req, func(w http.ResponseWriter, _ []byte) { p.Wire.ToolCalls(w, r) })
}

// wantCalls checks the calls an adapter mapped: ids and names as sent,
// arguments JSON-equal when they are JSON, else as the wire carried them.
func wantCalls(t *testing.T, p Provider, got, want []model.ToolCall) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d tool calls %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.Name != w.Name {
			t.Errorf("tool_calls[%d] = %s %s, want %s %s (in the order the model gave them)", i, g.ID, g.Name, w.ID, w.Name)
		}
		switch {
		case json.Valid([]byte(w.Args)):
			if !jsonEqual([]byte(g.Args), []byte(w.Args)) {
				t.Errorf("tool_calls[%d] args %s, want %s", i, g.Args, w.Args)
			}
		case p.Wire.ArgsOnWire != nil:
			if want := p.Wire.ArgsOnWire(w.Args); g.Args != want {
				t.Errorf("tool_calls[%d] args %q, want %q as the wire carried them", i, g.Args, want)
			}
		default:
			if g.Args != w.Args {
				t.Errorf("tool_calls[%d] args %q, want %q exactly (passed through, not repaired)", i, g.Args, w.Args)
			}
		}
	}
}

func testToolCall(t *testing.T, p Provider) {
	req := toolRequest()
	r := reply()
	r.Text = ""
	r.Calls = []model.ToolCall{{ID: "call_abc123", Name: "get_weather", Args: `{"city":"Paris"}`}}
	resp, err := generate(t, toolCallServer(t, p, req, r).model(p), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	wantCalls(t, p, resp.ToolCalls, r.Calls)
	if resp.Text != "" {
		t.Errorf("Text %q, want none beside the call", resp.Text)
	}
	if resp.Usage != (model.Usage{In: r.In, Out: r.Out}) || resp.Model != ServedModel {
		t.Errorf("Usage %+v model %q, want {In:%d Out:%d} and %s", resp.Usage, resp.Model, r.In, r.Out, ServedModel)
	}
}

func testParallelToolCalls(t *testing.T, p Provider) {
	req := toolRequest()
	r := reply()
	r.Text = "Let me look that up."
	r.Calls = toolsAnswered().Messages[2].ToolCalls
	resp, err := generate(t, toolCallServer(t, p, req, r).model(p), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	wantCalls(t, p, resp.ToolCalls, r.Calls)
	if resp.Text != r.Text {
		t.Errorf("Text %q, want the text beside the calls %q", resp.Text, r.Text)
	}
}

func testMalformedArguments(t *testing.T, p Provider) {
	req := toolRequest()
	r := reply()
	r.Text = ""
	r.Calls = []model.ToolCall{
		{ID: "call_bad", Name: "get_weather", Args: `{"city": "Par`},
		{ID: "call_good", Name: "get_time", Args: `{}`},
	}
	resp, err := generate(t, toolCallServer(t, p, req, r).model(p), req)
	if err != nil {
		t.Fatalf("Generate: %v (arguments are the caller's to validate)", err)
	}
	wantCalls(t, p, resp.ToolCalls, r.Calls)
}

func testUnknownTool(t *testing.T, p Provider) {
	req := toolRequest()
	r := reply()
	r.Text = ""
	r.Calls = []model.ToolCall{{ID: "call_x", Name: "launch_rockets", Args: `{"count":3}`}}
	resp, err := generate(t, toolCallServer(t, p, req, r).model(p), req)
	if err != nil {
		t.Fatalf("Generate: %v (an unknown tool is the caller's to report)", err)
	}
	wantCalls(t, p, resp.ToolCalls, r.Calls)
}

func testToolResults(t *testing.T, p Provider) {
	req := toolsAnswered()
	r := reply()
	r.Text = "Paris is clear at 21°C; Rome's weather is unavailable. It is 22:00 UTC."
	s := newServer(t, p, req, func(w http.ResponseWriter, _ []byte) { p.Wire.Text(w, r) })
	resp, err := generate(t, s.model(p), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Text != r.Text || len(resp.ToolCalls) != 0 {
		t.Errorf("Text %q calls %+v, want the final answer %q and no calls", resp.Text, resp.ToolCalls, r.Text)
	}
}

func testToolChoice(t *testing.T, p Provider) {
	for name, c := range map[string]model.ToolChoice{
		"auto":                 {Mode: model.ToolAuto},
		"none":                 {Mode: model.ToolNone},
		"required":             {Mode: model.ToolRequired},
		"named":                {Mode: model.ToolNamed, Name: "get_time"},
		"no_parallel":          {NoParallel: true},
		"required_no_parallel": {Mode: model.ToolRequired, NoParallel: true},
	} {
		t.Run(name, func(t *testing.T) {
			req := toolRequest()
			req.ToolChoice = c
			if _, err := generate(t, textServer(t, p, req).model(p), req); err != nil {
				t.Fatalf("Generate: %v", err)
			}
		})
	}
}

func testUsageAcrossTurns(t *testing.T, p Provider) {
	first := toolRequest()
	second := toolRequest()
	calls := []model.ToolCall{{ID: "call_1", Name: "get_time", Args: `{}`}}
	second.Messages = append(second.Messages,
		model.Message{Role: model.Assistant, ToolCalls: calls},
		model.Message{Role: model.Tool, ToolCallID: "call_1", Content: "22:00Z"})
	turns := []struct {
		req *model.Request
		r   Reply
	}{
		{first, Reply{Model: ServedModel, In: 120, Out: 18, Calls: calls}},
		{second, Reply{Model: ServedModel, In: 161, Out: 9, Text: "It is 22:00 UTC."}},
	}
	s := newTurnServer(t, p, []*model.Request{first, second}, func(w http.ResponseWriter, turn int, _ []byte) {
		if turn == 0 {
			p.Wire.ToolCalls(w, turns[0].r)
		} else {
			p.Wire.Text(w, turns[1].r)
		}
	})
	m := s.model(p)
	var total model.Usage
	for i, tn := range turns {
		resp, err := generate(t, m, tn.req)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if resp.Usage != (model.Usage{In: tn.r.In, Out: tn.r.Out}) {
			t.Errorf("turn %d: Usage %+v, want {In:%d Out:%d} (a tool-call reply spends tokens too)", i, resp.Usage, tn.r.In, tn.r.Out)
		}
		total.In += resp.Usage.In
		total.Out += resp.Usage.Out
	}
	if total != (model.Usage{In: 281, Out: 27}) {
		t.Errorf("usage over both turns %+v, want {In:281 Out:27}", total)
	}
}

func testTooManyToolCalls(t *testing.T, p Provider) {
	t.Run("at_the_limit", func(t *testing.T) {
		req := toolRequest()
		r := reply()
		r.Text = ""
		r.Calls = manyCalls(model.MaxToolCalls)
		resp, err := generate(t, toolCallServer(t, p, req, r).model(p), req)
		if err != nil {
			t.Fatalf("Generate with %d calls: %v", model.MaxToolCalls, err)
		}
		if len(resp.ToolCalls) != model.MaxToolCalls {
			t.Errorf("%d calls, want %d", len(resp.ToolCalls), model.MaxToolCalls)
		}
	})
	t.Run("10000", func(t *testing.T) {
		req := toolRequest()
		r := reply()
		r.Text = ""
		r.Calls = manyCalls(10000)
		resp, err := generate(t, toolCallServer(t, p, req, r).model(p), req)
		wantClass(t, err, fault.Format)
		if !strings.Contains(err.Error(), "10000 tool calls") || !strings.Contains(err.Error(), "128") {
			t.Errorf("error %q does not say how many calls came and how many are accepted", err)
		}
		if resp != nil && (len(resp.ToolCalls) != 0 || resp.Usage != (model.Usage{In: r.In, Out: r.Out})) {
			t.Errorf("response beside the error: %d calls, usage %+v; want no calls and the usage", len(resp.ToolCalls), resp.Usage)
		}
	})
}

func manyCalls(n int) []model.ToolCall {
	calls := make([]model.ToolCall, n)
	for i := range calls {
		calls[i] = model.ToolCall{ID: "call_" + strconv.Itoa(i), Name: "get_time", Args: `{}`}
	}
	return calls
}

func testBadToolRequest(t *testing.T, p Provider) {
	for name, req := range map[string]*model.Request{
		"duplicate tool": func() *model.Request {
			r := toolRequest()
			r.Tools = append([]model.ToolDef{}, Tools[0], Tools[0])
			return r
		}(),
		"orphan result": func() *model.Request {
			r := toolRequest()
			r.Messages = append(r.Messages, model.Message{Role: model.Tool, ToolCallID: "call_nowhere", Content: "x"})
			return r
		}(),
		"named tool not offered": func() *model.Request {
			r := toolRequest()
			r.ToolChoice = model.ToolChoice{Mode: model.ToolNamed, Name: "send_email"}
			return r
		}(),
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			s := newServer(t, p, req, func(w http.ResponseWriter, _ []byte) { p.Wire.Text(w, reply()) })
			_, err := generate(t, s.model(p), req)
			wantClass(t, err, fault.Business)
			if n := s.requests.Load(); n != 0 {
				t.Errorf("%d requests reached the server, want none for a request the port rejects", n)
			}
		})
	}
}
