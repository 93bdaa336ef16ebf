package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/openai"
)

// The chunks follow the Chat Completions streaming reference
// (https://platform.openai.com/docs/api-reference/chat-streaming): each
// event a `data: {chat.completion.chunk}` line and a blank line; tool calls
// as deltas by index, the id and name in the first, the arguments' text in
// pieces; with stream_options.include_usage a last chunk with no choices
// and the usage; then `data: [DONE]`.

func chunk(choices []any, usage any) string {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1741569952,
		"model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_1", "choices": choices, "usage": usage})
	return "data: " + string(b) + "\n\n"
}

func delta(d map[string]any, finish any) []any {
	return []any{map[string]any{"index": 0, "delta": d, "logprobs": nil, "finish_reason": finish}}
}

func callDelta(index int, id, name, args string) map[string]any {
	c := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		c["id"], c["type"] = id, "function"
		c["function"].(map[string]any)["name"] = name
	}
	return map[string]any{"tool_calls": []any{c}}
}

// streamedReply is text and two parallel tool calls whose arguments come
// in pieces, interleaved, then the usage.
var streamedReply = []string{
	chunk(delta(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil), nil),
	chunk(delta(map[string]any{"content": "Looking "}, nil), nil),
	chunk(delta(map[string]any{"content": "that up."}, nil), nil),
	chunk(delta(callDelta(0, "call_a", "status", ""), nil), nil),
	chunk(delta(callDelta(0, "", "", `{"ord`), nil), nil),
	chunk(delta(callDelta(1, "call_b", "crm__find", `{"q":`), nil), nil),
	chunk(delta(callDelta(0, "", "", `er":"1042"}`), nil), nil),
	chunk(delta(callDelta(1, "", "", `"ada \"x\""}`), nil), nil),
	chunk(delta(map[string]any{}, "tool_calls"), nil),
	chunk([]any{}, map[string]any{"prompt_tokens": 57, "completion_tokens": 31, "total_tokens": 88}),
	"data: [DONE]\n\n",
}

// theReply is the same reply unstreamed.
const theReply = `{"id":"chatcmpl-1","object":"chat.completion","created":1741569952,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant","content":"Looking that up.","refusal":null,
"tool_calls":[{"id":"call_a","type":"function","function":{"name":"status","arguments":"{\"order\":\"1042\"}"}},
{"id":"call_b","type":"function","function":{"name":"crm__find","arguments":"{\"q\":\"ada \\\"x\\\"\"}"}}]}}],
"usage":{"prompt_tokens":57,"completion_tokens":31,"total_tokens":88}}`

// sseServer answers a streamed request with events (flushed one by one)
// and an unstreamed one with theReply; it records whether each request
// asked to stream with usage.
func sseServer(t *testing.T, events func(n int) []string) (*httptest.Server, *[]string) {
	var asked []string
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream        bool `json:"stream"`
			StreamOptions struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		asked = append(asked, fmt.Sprintf("stream=%v usage=%v", req.Stream, req.StreamOptions.IncludeUsage))
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, theReply)
			return
		}
		n++
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events(n) {
			fmt.Fprint(w, e)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func streamModel(t *testing.T, url string) *openai.Model {
	t.Helper()
	m, err := openai.New(openai.Config{BaseURL: url + "/v1", Model: "gpt-4o-mini", APIKey: "sk-test-stream-key-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func toolRequest() *model.Request {
	return &model.Request{Messages: []model.Message{{Role: model.User, Content: "where is my order"}},
		Tools: []model.ToolDef{{Name: "status"}, {Name: "crm__find"}}}
}

// A streamed call hands the text to the DeltaFunc as it arrives and
// returns the same Response as the unstreamed call: text, both tool calls
// with their assembled arguments, usage, model.
func TestStreamAssemblesTheSameResponse(t *testing.T) {
	srv, asked := sseServer(t, func(int) []string { return streamedReply })
	m := streamModel(t, srv.URL)
	plain, err := m.Generate(context.Background(), toolRequest())
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	ctx := model.WithDeltas(context.Background(), func(s string) { deltas = append(deltas, s) })
	streamed, err := m.Generate(ctx, toolRequest())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain, streamed) {
		t.Fatalf("streamed response\n%+v\ndiffers from the unstreamed\n%+v", streamed, plain)
	}
	if len(plain.ToolCalls) != 2 || plain.ToolCalls[1].Args != `{"q":"ada \"x\""}` || plain.Usage != (model.Usage{In: 57, Out: 31}) {
		t.Fatalf("unexpected reply %+v", plain)
	}
	if strings.Join(deltas, "|") != "Looking |that up." {
		t.Fatalf("deltas %q, want the text in its two pieces", deltas)
	}
	if want := []string{"stream=false usage=false", "stream=true usage=true"}; !reflect.DeepEqual(*asked, want) {
		t.Fatalf("requests %v, want %v", *asked, want)
	}
	// a structured request is not streamed
	_, _ = m.Generate(ctx, &model.Request{Messages: []model.Message{{Role: model.User, Content: "x"}}, Schema: json.RawMessage(`{"type":"object"}`)})
	if got := (*asked)[2]; got != "stream=false usage=false" {
		t.Fatalf("a request with a schema was sent %s", got)
	}
}

// A stream cut before its finish_reason (the connection closes) is a
// transient error, so the caller asks again, and the next call streams
// the whole reply; an error event in the stream is transient too.
func TestStreamCutIsTransient(t *testing.T) {
	srv, _ := sseServer(t, func(n int) []string {
		switch n {
		case 1:
			return streamedReply[:5]
		case 2:
			return append(streamedReply[:3:3], "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n")
		}
		return streamedReply
	})
	m := streamModel(t, srv.URL)
	var text strings.Builder
	ctx := model.WithDeltas(context.Background(), func(s string) { text.WriteString(s) })
	for i, want := range []string{"ended before the reply was complete", "The server had an error"} {
		resp, err := m.Generate(ctx, toolRequest())
		if fault.ClassOf(err) != fault.Transient || !strings.Contains(err.Error(), want) || resp != nil {
			t.Fatalf("call %d: %v (%s), %+v; want a transient error saying %q", i+1, err, fault.ClassOf(err), resp, want)
		}
		if strings.Contains(err.Error(), "sk-test-stream") {
			t.Fatalf("the key in an error: %v", err)
		}
	}
	text.Reset()
	resp, err := m.Generate(ctx, toolRequest())
	if err != nil || len(resp.ToolCalls) != 2 || text.String() != "Looking that up." {
		t.Fatalf("the call after: %v, %+v, text %q", err, resp, text.String())
	}
}

// Hostile streams are bounded: a tool call at an index past
// model.MaxToolCalls, and a body past the stream limit, are format errors
// read no further.
func TestStreamBounds(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	srv, _ := sseServer(t, func(n int) []string {
		if n == 1 {
			return []string{chunk(delta(callDelta(1_000_000, "c", "status", "{}"), nil), nil), "data: [DONE]\n\n"}
		}
		var out []string
		for range 40 { // 40 MiB of text, never finished
			out = append(out, chunk(delta(map[string]any{"content": big}, nil), nil))
		}
		return out
	})
	m := streamModel(t, srv.URL)
	got := 0
	ctx := model.WithDeltas(context.Background(), func(s string) { got += len(s) })
	for i, want := range []string{"tool call at index 1000000", "passed 32 MiB"} {
		_, err := m.Generate(ctx, toolRequest())
		if fault.ClassOf(err) != fault.Format || !strings.Contains(err.Error(), want) {
			t.Fatalf("call %d: %v (%s), want a format error saying %q", i+1, err, fault.ClassOf(err), want)
		}
	}
	if got > 32<<20 {
		t.Fatalf("%d bytes of text delivered past the limit", got)
	}
}

// A server that ignores stream: true and answers the whole reply in JSON
// is read as such: the same Response, the text as one delta.
func TestStreamRequestAnsweredWithJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprint(w, theReply)
	}))
	t.Cleanup(srv.Close)
	m := streamModel(t, srv.URL)
	var deltas []string
	ctx := model.WithDeltas(context.Background(), func(s string) { deltas = append(deltas, s) })
	resp, err := m.Generate(ctx, toolRequest())
	if err != nil || len(resp.ToolCalls) != 2 || resp.Text != "Looking that up." || strings.Join(deltas, "|") != "Looking that up." {
		t.Fatalf("%v, %+v, deltas %q", err, resp, deltas)
	}
}
