// Package chattest serves OpenAI Chat Completions replies for tests: a
// real HTTP server speaking the wire format, scripted by turn.
package chattest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Server is a Chat Completions server started by Turns; Calls counts the
// requests it answered, refused ones included.
type Server struct {
	*httptest.Server
	Calls atomic.Int32
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
