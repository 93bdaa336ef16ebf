package cassette_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/cassette"
	"github.com/reinhq/rein/model/scripted"
)

// agentTurns is a two-turn agent conversation: the model calls two tools
// in parallel, then answers from their results.
func agentTurns() (first, second *model.Request, calls []model.ToolCall) {
	tools := []model.ToolDef{
		{Name: "get_weather", Description: "Weather of a city", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		{Name: "get_time"},
	}
	first = &model.Request{Model: "gpt-4o-mini", StepID: "agent", Decision: "agent", Tools: tools,
		ToolChoice: model.ToolChoice{Mode: model.ToolRequired},
		Messages:   []model.Message{{Role: model.User, Content: "weather in Paris, and the time?"}}}
	calls = []model.ToolCall{{ID: "call_0_0", Name: "get_weather", Args: `{"city":"Paris"}`}, {ID: "call_0_1", Name: "get_time", Args: `{}`}}
	second = &model.Request{Model: "gpt-4o-mini", StepID: "agent", Decision: "agent", Tools: tools,
		Messages: append(append([]model.Message(nil), first.Messages...),
			model.Message{Role: model.Assistant, ToolCalls: calls},
			model.Message{Role: model.Tool, ToolCallID: "call_0_0", Content: "sunny, 21°C"},
			model.Message{Role: model.Tool, ToolCallID: "call_0_1", Content: "time service down", IsError: true})}
	return first, second, calls
}

func agentScript() *scripted.Model {
	return scripted.New([]scripted.Reply{
		{Step: "agent", ToolCalls: []model.ToolCall{{Name: "get_weather", Args: `{"city":"Paris"}`}, {Name: "get_time", Args: `{}`}}, Tokens: &model.Usage{In: 40, Out: 12}},
		{Step: "agent", Raw: ptr("Sunny in Paris; the time is unknown."), Tokens: &model.Usage{In: 70, Out: 9}},
	})
}

func ptr(s string) *string { return &s }

// A recorded agent conversation replays offline: tool calls come back as
// recorded, each turn matched by its tools, calls and results.
func TestToolCallsRoundTrip(t *testing.T) {
	t.Parallel()
	first, second, calls := agentTurns()
	path := record(t, agentScript(), first, second)
	p, err := cassette.Replay(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	resp, err := p.Generate(ctx, first)
	if err != nil || !reflect.DeepEqual(resp.ToolCalls, calls) || resp.Usage != (model.Usage{In: 40, Out: 12}) {
		t.Fatalf("turn 1 replayed %+v, %v; want calls %+v", resp, err, calls)
	}
	resp.ToolCalls[0].Args = "mutated" // the caller owns what it gets
	resp, err = p.Generate(ctx, second)
	if err != nil || resp.Text != "Sunny in Paris; the time is unknown." || len(resp.ToolCalls) != 0 {
		t.Fatalf("turn 2 replayed %+v, %v; want the final answer", resp, err)
	}
	c, err := cassette.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Exchanges[0].Response.ToolCalls; !reflect.DeepEqual(got, calls) {
		t.Errorf("recorded calls %+v, want %+v", got, calls)
	}
	if x := c.Exchanges[0].Request; len(x.Tools) != 2 || x.ToolChoice == nil || x.ToolChoice.Mode != model.ToolRequired {
		t.Errorf("recorded request %+v, want its tools and tool choice", x)
	}
	// A key computed from the file is the recorded one.
	for i, x := range c.Exchanges {
		if cassette.Key(x.Request.ModelRequest()) != x.Key {
			t.Errorf("exchanges[%d]: the recorded request does not hash to its key", i)
		}
	}
}

func TestToolCallsInKey(t *testing.T) {
	t.Parallel()
	_, base, _ := agentTurns()
	k := cassette.Key(base)
	differ := map[string]func(*model.Request){
		"no tools": func(r *model.Request) { r.Tools = nil },
		"tool schema": func(r *model.Request) {
			r.Tools = []model.ToolDef{r.Tools[0], {Name: "get_time", Schema: json.RawMessage(`{}`)}}
		},
		"tool choice": func(r *model.Request) { r.ToolChoice = model.ToolChoice{Mode: model.ToolNone} },
		"no parallel": func(r *model.Request) { r.ToolChoice = model.ToolChoice{NoParallel: true} },
		"call args": func(r *model.Request) {
			r.Messages[1].ToolCalls = []model.ToolCall{{ID: "call_0_0", Name: "get_weather", Args: `{"city":"Rome"}`}}
		},
		"call id": func(r *model.Request) {
			r.Messages[1].ToolCalls = []model.ToolCall{{ID: "x", Name: "get_weather", Args: `{"city":"Paris"}`}}
		},
		"result":         func(r *model.Request) { r.Messages[2].Content = "rain" },
		"result call id": func(r *model.Request) { r.Messages[2].ToolCallID = "call_0_1" },
		"error flag":     func(r *model.Request) { r.Messages[3].IsError = false },
	}
	for name, f := range differ {
		_, r, _ := agentTurns()
		f(r)
		if cassette.Key(r) == k {
			t.Errorf("%s did not change the key", name)
		}
	}
	_, r, _ := agentTurns()
	r.ToolChoice = model.ToolChoice{}
	r.StepID, r.RunID = "other", "other"
	if cassette.Key(r) != k {
		t.Error("step or run id changed the key")
	}
}

// A replayed conversation that diverges (another tool result) misses.
func TestToolResultMiss(t *testing.T) {
	t.Parallel()
	first, second, _ := agentTurns()
	p, err := cassette.Replay(record(t, agentScript(), first, second))
	if err != nil {
		t.Fatal(err)
	}
	second.Messages[2].Content = "rain, 9°C"
	_, _ = p.Generate(context.Background(), first)
	_, err = p.Generate(context.Background(), second)
	if fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "schema or tools: record the cassette again") {
		t.Errorf("diverged turn: %v, want a miss", err)
	}
}

func TestToolCallsRedacted(t *testing.T) {
	const secret = "sk-live-0123456789abcdefghij"
	first, second, _ := agentTurns()
	second.Messages[1].ToolCalls = []model.ToolCall{{ID: "call_0_0", Name: "get_weather", Args: `{"token":"` + secret + `"}`}}
	second.Messages = second.Messages[:3]
	m := model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{ToolCalls: []model.ToolCall{{ID: "c", Name: "login", Args: `{"key":"` + secret + `"}`}}}, nil
	})
	data, err := os.ReadFile(record(t, m, first, second))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(secret)) || !bytes.Contains(data, []byte(cassette.Redacted)) {
		t.Errorf("cassette holds the secret or no redaction:\n%s", data)
	}
}

func TestToolsFormatGolden(t *testing.T) {
	t.Parallel()
	first, second, _ := agentTurns()
	got, err := os.ReadFile(record(t, agentScript(), first, second))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("cassette differs from %s (go test -update to accept):\n%s", golden, got)
	}
}
