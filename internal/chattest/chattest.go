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
	return Serve(t, key, func(req *Request) string {
		turn := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				turn++
			}
		}
		return replies[min(turn, len(replies)-1)]
	})
}

// Request is what Serve's answer function is given of a request.
type Request struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// Message is one message of a Request: its role, its text ("" for none)
// and, for a tool message, the call it answers.
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"-"`
	ToolCallID string `json:"tool_call_id"`
	// Raw is the message as sent.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON reads a message whose content is a string, null or a
// list of text parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	var v struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	m.Role, m.ToolCallID, m.Raw = v.Role, v.ToolCallID, append(json.RawMessage(nil), b...)
	var text string
	if json.Unmarshal(v.Content, &text) == nil {
		m.Content = text
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(v.Content, &parts) == nil {
		for _, p := range parts {
			m.Content += p.Text
		}
	}
	return nil
}

// System is the request's first message's text when it is a system one.
func (r *Request) System() string {
	if len(r.Messages) > 0 && (r.Messages[0].Role == "system" || r.Messages[0].Role == "developer") {
		return r.Messages[0].Content
	}
	return ""
}

// ToolNames are the names of the tools the request offers, in order.
func (r *Request) ToolNames() []string {
	out := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		out[i] = t.Function.Name
	}
	return out
}

// Serve starts a server that answers each request with answer's reply,
// an assistant message as JSON, streamed when the request asks (stream:
// true); an empty reply is a 400 error naming the request as unexpected.
// A request without "Bearer key" gets OpenAI's 401 (key "": any
// request is answered). answer may be called concurrently. The server is closed when t ends.
func Serve(t testing.TB, key string, answer func(*Request) string) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Calls.Add(1)
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		var req Request
		_ = json.NewDecoder(r.Body).Decode(&req)
		reply := answer(&req)
		if reply == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"chattest: unexpected conversation","type":"invalid_request_error"}}`)
			return
		}
		model, _ := json.Marshal(req.Model)
		if req.Stream {
			s.Streamed.Add(1)
			stream(w, model, reply)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1,"model":%s,"choices":[{"index":0,"message":%s,"finish_reason":"stop"}],
			"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, s.Calls.Load(), model, reply)
	}))
	t.Cleanup(s.Close)
	return s
}

// Text is a reply of an assistant message with text only.
func Text(text string) string {
	b, _ := json.Marshal(text)
	return `{"role":"assistant","content":` + string(b) + `}`
}

// Call is a reply of an assistant message with one tool call.
func Call(id, name, args string) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]}`, id, name, a)
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
