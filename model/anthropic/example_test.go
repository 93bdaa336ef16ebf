package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/anthropic"
)

func Example() {
	// A stand-in for https://api.anthropic.com: the model answers by
	// calling the answer tool.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
			"content":[{"type":"tool_use","id":"toolu_01","name":"answer","input":{"route":"account","reason":"billing"}}],
			"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":412,"output_tokens":38}}`)
	}))
	defer srv.Close()

	m, err := anthropic.New(anthropic.Config{
		BaseURL: srv.URL,
		APIKey:  "sk-ant-example", // read it from the environment in real code
		Model:   "claude-sonnet-4-5",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{
			{Role: model.System, Content: "Route the request."},
			{Role: model.User, Content: "I think I was charged twice this month"},
		},
		Schema: []byte(`{"type":"object","properties":{"route":{"type":"string"},"reason":{"type":"string"}},"required":["route","reason"]}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text)
	fmt.Println(resp.Model, resp.Usage.In, resp.Usage.Out)
	// Output:
	// {"route":"account","reason":"billing"}
	// claude-sonnet-4-5-20250929 412 38
}
