package scripted_test

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/scripted"
)

func ExampleParse() {
	m, err := scripted.Parse([]byte(`replies:
  - step: extract_info
    output: {"name": "Zhang", "years": 8}
  - step: extract_info
    error: transient
    message: upstream 503
`), "script.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &model.Request{StepID: "extract_info", Messages: []model.Message{{Role: model.User, Content: "resume"}}}
	resp, _ := m.Generate(context.Background(), req)
	fmt.Println(resp.Text, resp.Usage.In, resp.Usage.Out)
	_, err = m.Generate(context.Background(), req)
	fmt.Println(fault.ClassOf(err), err)
	// Output:
	// {"name":"Zhang","years":8} 2 7
	// transient scripted model: step "extract_info", replies[1]: upstream 503
}

func ExampleParse_errors() {
	_, err := scripted.Parse([]byte("replies:\n  - step: a\n    outptu: {}\n  - raw: x\n"), "script.yaml")
	fmt.Println(err)
	// Output:
	// script.yaml:2:5: replies[0]: give exactly one of output, raw, error, route, plan or tool_calls
	// script.yaml:3:5: unknown field "outptu" in replies[0] (known: step, decision, turn, contains, model, output, raw, route, reason, plan, tool_calls, error, message, tokens, delay)
	// script.yaml:4:5: replies[1]: missing `step:` (the step id this reply answers)
}

func ExampleParse_decisions() {
	m, err := scripted.Parse([]byte(`replies:
  - step: triage
    decision: route
    route: account
    reason: a billing question
  - step: plan_brief
    decision: plan
    plan:
      goal: Tokyo brief
      steps:
        - {id: weather, tool: read_weather, args: {city: Tokyo}}
`), "script.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range []*model.Request{
		{StepID: "triage", Decision: "route"},
		{StepID: "plan_brief", Decision: "plan"},
		{StepID: "triage"},
	} {
		resp, err := m.Generate(context.Background(), r)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(resp.Text)
	}
	// Output:
	// {"route":"account","reason":"a billing question"}
	// {"goal":"Tokyo brief","steps":[{"args":{"city":"Tokyo"},"id":"weather","tool":"read_weather"}]}
	// scripted model: no unused reply for step "triage" (script has 1 replies for it, all used)
}

// An agent's turns: tool calls first, then, once the tool results are in
// the conversation, the final answer.
func ExampleParse_toolCalls() {
	m, err := scripted.Parse([]byte(`replies:
  - step: travel_agent
    tool_calls:
      - {name: get_weather, args: {city: Paris}}
      - {id: rome, name: get_weather, raw_args: '{"city": "Ro'}
  - step: travel_agent
    contains: "21°C"
    raw: Paris is sunny at 21°C; Rome did not answer.
`), "script.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &model.Request{StepID: "travel_agent", Decision: "agent",
		Tools:    []model.ToolDef{{Name: "get_weather"}},
		Messages: []model.Message{{Role: model.User, Content: "Weather in Paris and Rome?"}}}
	resp, _ := m.Generate(context.Background(), req)
	for _, c := range resp.ToolCalls {
		fmt.Printf("%s %s %s\n", c.ID, c.Name, c.Args)
	}
	req.Messages = append(req.Messages,
		model.Message{Role: model.Assistant, ToolCalls: resp.ToolCalls},
		model.Message{Role: model.Tool, ToolCallID: "call_0_0", Content: "sunny, 21°C"},
		model.Message{Role: model.Tool, ToolCallID: "rome", Content: "arguments are not JSON", IsError: true})
	resp, _ = m.Generate(context.Background(), req)
	fmt.Println(resp.Text)
	// Output:
	// call_0_0 get_weather {"city":"Paris"}
	// rome get_weather {"city": "Ro
	// Paris is sunny at 21°C; Rome did not answer.
}
