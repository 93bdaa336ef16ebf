package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/openai"
)

func Example() {
	// A stand-in for https://api.openai.com/v1 (or DeepSeek, vLLM, Ollama).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1741569952,"model":"gpt-4o-mini-2024-07-18",
			"choices":[{"index":0,"message":{"role":"assistant","content":"{\"route\":\"account\",\"reason\":\"billing\",\"confidence\":null}","refusal":null},"logprobs":null,"finish_reason":"stop"}],
			"usage":{"prompt_tokens":52,"completion_tokens":14,"total_tokens":66}}`)
	}))
	defer srv.Close()

	m, err := openai.New(openai.Config{
		BaseURL:    srv.URL,
		APIKey:     "sk-example", // read it from the environment in real code
		Model:      "gpt-4o-mini",
		Structured: openai.JSONSchema,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{{Role: model.User, Content: "I think I was charged twice this month"}},
		Schema:   []byte(`{"type":"object","properties":{"route":{"type":"string"},"reason":{"type":"string"},"confidence":{"type":"number"}},"required":["route","reason"]}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The null the strict schema forced for the optional "confidence" is gone.
	fmt.Println(resp.Text)
	fmt.Println(resp.Model, resp.Usage.In, resp.Usage.Out)
	// Output:
	// {"route":"account","reason":"billing"}
	// gpt-4o-mini-2024-07-18 52 14
}
