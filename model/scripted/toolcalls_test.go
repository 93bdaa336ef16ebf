package scripted

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

func TestParseToolCalls(t *testing.T) {
	t.Parallel()
	src := `replies:
  - step: agent
    decision: agent
    tool_calls:
      - {name: get_weather, args: {city: Paris, days: 2}}
      - id: t2
        name: get_weather
        raw_args: '{"city": "Ro'
      - {name: get_time}
  - step: agent
    contains: "21"
    raw: "Paris is sunny."
`
	m, err := Parse([]byte(src), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{
		{Name: "get_weather", Args: `{"city":"Paris","days":2}`},
		{ID: "t2", Name: "get_weather", Args: `{"city": "Ro`},
		{Name: "get_time", Args: `{}`},
	}
	if !reflect.DeepEqual(m.replies[0].ToolCalls, want) || m.replies[0].Decision != "agent" {
		t.Errorf("reply %+v, want tool calls %+v", m.replies[0], want)
	}
}

func TestParseToolCallsRejects(t *testing.T) {
	t.Parallel()
	src := `replies:
  - step: a
    tool_calls: []
  - step: a
    tool_calls: {name: x}
  - step: a
    tool_calls:
      - {args: {x: 1}}
      - {name: "", id: ""}
      - {name: b, id: k}
      - {name: c, id: k, args: [1], extra: 1}
      - {name: d, args: {}, raw_args: "{}"}
      - just_a_name
  - step: a
    decision: route
    tool_calls: [{name: x}]
  - step: a
    raw: "x"
    tool_calls: [{name: x}]
`
	want := []string{
		"s.yaml:3:17: replies[0].tool_calls is empty: list at least one call (for a final answer, use output: or raw:)",
		"s.yaml:5:17: replies[1].tool_calls must be a list of calls such as {name: get_weather, args: {city: Paris}}, got a mapping",
		"s.yaml:8:9: replies[2].tool_calls[0]: missing `name:` (the tool the model calls)",
		`s.yaml:9:16: replies[2].tool_calls[1]: name must not be empty`,
		`s.yaml:9:24: replies[2].tool_calls[1]: id must not be empty (leave it out to have one made)`,
		`s.yaml:11:32: replies[2].tool_calls[3]: args must be a mapping (the call's arguments object), got a list; to send other text, use raw_args:`,
		`s.yaml:11:37: unknown field "extra" in replies[2].tool_calls[3] (known: id, name, args, raw_args)`,
		`s.yaml:11:23: replies[2].tool_calls[3]: id "k" is also replies[2].tool_calls[2]'s; ids pair results with calls, so they must be unique`,
		`s.yaml:12:29: replies[2].tool_calls[4]: give args or raw_args, not both`,
		`s.yaml:13:9: replies[2].tool_calls[5] must be a mapping, got string`,
		`s.yaml:16:5: replies[3]: tool_calls answer a turn that offers tools, but decision is route, which offers none (drop decision: or say decision: agent)`,
		`s.yaml:19:5: replies[4]: give exactly one of output, raw, error, route, plan or tool_calls, not raw and tool_calls`,
	}
	_, err := Parse([]byte(src), "s.yaml")
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v, want a *ParseError", err)
	}
	got := strings.Split(err.Error(), "\n")
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("missing problem %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(got), len(want), err)
	}
}

func TestParseToolCallsLimit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("replies:\n  - step: a\n    tool_calls:\n")
	for i := range model.MaxToolCalls + 1 {
		fmt.Fprintf(&b, "      - {name: t%d}\n", i)
	}
	_, err := Parse([]byte(b.String()), "s.yaml")
	if err == nil || !strings.Contains(err.Error(), "s.yaml:4:7: replies[0].tool_calls lists 129 calls; a reply may hold at most 128 (model.MaxToolCalls)") {
		t.Errorf("error %v, want the limit located", err)
	}
}

// An agent loop asks the same step turn after turn: each turn takes the
// step's next reply, tool calls first, the final answer once the tool
// results are in the prompt. Made ids are the same on every run.
func TestToolCallConversation(t *testing.T) {
	t.Parallel()
	m, err := Parse([]byte(`replies:
  - step: agent
    tool_calls: [{name: get_weather, args: {city: Paris}}, {name: get_time}]
    tokens: {in: 50, out: 12}
  - step: agent
    contains: "sunny"
    raw: "Sunny in Paris at noon."
`), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	turn1 := &model.Request{StepID: "agent", Decision: "agent", Tools: []model.ToolDef{{Name: "get_weather"}, {Name: "get_time"}},
		Messages: []model.Message{{Role: model.User, Content: "weather and time?"}}}
	resp, err := m.Generate(ctx, turn1)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.ToolCall{{ID: "call_0_0", Name: "get_weather", Args: `{"city":"Paris"}`}, {ID: "call_0_1", Name: "get_time", Args: "{}"}}
	if !reflect.DeepEqual(resp.ToolCalls, want) || resp.Text != "" || resp.Usage != (model.Usage{In: 50, Out: 12}) {
		t.Fatalf("turn 1: %+v, want calls %+v", resp, want)
	}
	turn2 := *turn1
	turn2.Messages = append(append([]model.Message(nil), turn1.Messages...),
		model.Message{Role: model.Assistant, ToolCalls: resp.ToolCalls},
		model.Message{Role: model.Tool, ToolCallID: "call_0_0", Content: "sunny, 21°C"},
		model.Message{Role: model.Tool, ToolCallID: "call_0_1", Content: "12:00"})
	resp, err = m.Generate(ctx, &turn2)
	if err != nil || resp.Text != "Sunny in Paris at noon." || len(resp.ToolCalls) != 0 {
		t.Fatalf("turn 2: %+v, %v; want the final answer", resp, err)
	}
	if _, err := m.Generate(ctx, &turn2); fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "all used") {
		t.Errorf("turn 3: %v, want a business error: the script is used up", err)
	}
}

func TestGoToolCallsChecked(t *testing.T) {
	t.Parallel()
	m := New([]Reply{
		{Step: "a", ToolCalls: make([]model.ToolCall, model.MaxToolCalls+1)},
		{Step: "b", ToolCalls: []model.ToolCall{{ID: "x", Name: "n"}, {ID: "x", Name: "n"}}},
	})
	for _, step := range []string{"a", "b"} {
		if _, err := m.Generate(context.Background(), req(step, "", "")); fault.ClassOf(err) != fault.Business {
			t.Errorf("step %s: %v, want a business error", step, err)
		}
	}
}
