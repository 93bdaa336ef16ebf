// Package chattest serves OpenAI Chat Completions replies for tests: a
// real HTTP server speaking the wire format, scripted by turn.
package chattest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Server is a Chat Completions server started by Turns; Calls counts the
// requests it answered, refused ones included.
type Server struct {
	*httptest.Server
	Calls atomic.Int32
	// Streamed counts the requests that asked to stream (stream: true).
	Streamed atomic.Int32
}

// Turns starts a server that answers a request holding n assistant
// messages with replies[n] (the last reply once they run out), an
// assistant message as JSON ({"role":"assistant","content":…,
// "tool_calls":…}). A request without "Bearer key" gets OpenAI's 401. The
// server is closed when t ends.
func Turns(t testing.TB, key string, replies ...string) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		turn := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				turn++
			}
		}
		model, _ := json.Marshal(req.Model)
		if req.Stream {
			s.Streamed.Add(1)
			stream(w, model, replies[min(turn, len(replies)-1)])
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1,"model":%s,"choices":[{"index":0,"message":%s,"finish_reason":"stop"}],
			"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, s.Calls.Load(), model, replies[min(turn, len(replies)-1)])
	}))
	t.Cleanup(s.Close)
	return s
}

// SupportAgent are the replies of examples/support-agent's three turns:
// look order 1042 up and list its charges, refund charge ch_2 (a call that
// waits for approval), answer.
var SupportAgent = []string{
	`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"lookup_order","arguments":"{\"order\":\"1042\"}"}},
		{"id":"c2","type":"function","function":{"name":"list_charges","arguments":"{\"order\":\"1042\"}"}}]}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"c3","type":"function","function":{"name":"issue_refund","arguments":"{\"order\":\"1042\",\"charge\":\"ch_2\",\"amount\":59.9}"}}]}`,
	`{"role":"assistant","content":"I refunded the duplicate charge ch_2."}`,
}

// stream answers with reply (an assistant message as JSON) as a streamed
// chat completion: the text word by word, each tool call's id and name in
// one chunk and its arguments in two, the finish_reason, the usage, and
// [DONE], each event flushed.
func stream(w http.ResponseWriter, model []byte, reply string) {
	var msg struct {
		Content   *string `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(reply), &msg); err != nil {
		panic(fmt.Sprintf("chattest: reply %s: %v", reply, err))
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(choices, usage string) {
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-s\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%s,\"choices\":%s,\"usage\":%s}\n\n", model, choices, usage)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	delta := func(d any, finish string) {
		b, _ := json.Marshal(d)
		fin := "null"
		if finish != "" {
			fin = `"` + finish + `"`
		}
		send(fmt.Sprintf(`[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]`, b, fin), "null")
	}
	delta(map[string]any{"role": "assistant", "content": ""}, "")
	if msg.Content != nil {
		words := strings.SplitAfter(*msg.Content, " ")
		for _, piece := range words {
			delta(map[string]any{"content": piece}, "")
		}
	}
	for i, tc := range msg.ToolCalls {
		args := tc.Function.Arguments
		delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Function.Name, "arguments": args[:len(args)/2]}}}}, "")
		delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": args[len(args)/2:]}}}}, "")
	}
	finish := "stop"
	if len(msg.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	delta(map[string]any{}, finish)
	send("[]", `{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`)
	fmt.Fprint(w, "data: [DONE]\n\n")
}
