package anthropic_test

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
	"github.com/reinhq/rein/model/anthropic"
)

// The events follow the Messages streaming reference
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming): each
// an `event: TYPE` line, a `data: {...}` line and a blank line;
// message_start, per block content_block_start / content_block_delta
// (text_delta, input_json_delta) / content_block_stop, ping, message_delta
// (stop_reason, cumulative output usage), message_stop.

func event(typ string, data map[string]any) string {
	data["type"] = typ
	b, _ := json.Marshal(data)
	return "event: " + typ + "\ndata: " + string(b) + "\n\n"
}

var streamedMessage = []string{
	event("message_start", map[string]any{"message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant",
		"model": "claude-sonnet-4-5-20250929", "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 472, "output_tokens": 2, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 10}}}),
	event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
	event("ping", map[string]any{}),
	event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": "Looking "}}),
	event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": "that up."}}),
	event("content_block_stop", map[string]any{"index": 0}),
	event("content_block_start", map[string]any{"index": 1, "content_block": map[string]any{"type": "tool_use", "id": "toolu_a", "name": "status", "input": map[string]any{}}}),
	event("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": ""}}),
	event("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": `{"order":`}}),
	event("content_block_delta", map[string]any{"index": 1, "delta": map[string]any{"type": "input_json_delta", "partial_json": `"1042"}`}}),
	event("content_block_stop", map[string]any{"index": 1}),
	event("content_block_start", map[string]any{"index": 2, "content_block": map[string]any{"type": "tool_use", "id": "toolu_b", "name": "ping", "input": map[string]any{}}}),
	event("content_block_stop", map[string]any{"index": 2}),
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 89}}),
	event("message_stop", map[string]any{}),
}

// theMessage is the same reply unstreamed.
const theMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
"content":[{"type":"text","text":"Looking that up."},{"type":"tool_use","id":"toolu_a","name":"status","input":{"order":"1042"}},
{"type":"tool_use","id":"toolu_b","name":"ping","input":{}}],
"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":89,"cache_creation_input_tokens":0,"cache_read_input_tokens":10}}`

func sseServer(t *testing.T, events func(n int) []string) (*httptest.Server, *[]bool) {
	var asked []bool
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		asked = append(asked, req.Stream)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, theMessage)
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

func streamModel(t *testing.T, url string) *anthropic.Model {
	t.Helper()
	m, err := anthropic.New(anthropic.Config{BaseURL: url, Model: "claude-sonnet-4-5", APIKey: "sk-ant-test-stream-key-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func toolRequest() *model.Request {
	return &model.Request{Messages: []model.Message{{Role: model.User, Content: "where is my order"}},
		Tools: []model.ToolDef{{Name: "status"}, {Name: "ping"}}}
}

// A streamed call hands the text to the DeltaFunc as it arrives and
// returns the same Response as the unstreamed call.
func TestStreamAssemblesTheSameResponse(t *testing.T) {
	srv, asked := sseServer(t, func(int) []string { return streamedMessage })
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
	if len(plain.ToolCalls) != 2 || plain.ToolCalls[0].Args != `{"order":"1042"}` || plain.ToolCalls[1].Args != `{}` || plain.Usage != (model.Usage{In: 482, Out: 89}) {
		t.Fatalf("unexpected reply %+v", plain)
	}
	if strings.Join(deltas, "|") != "Looking |that up." {
		t.Fatalf("deltas %q, want the text in its two pieces", deltas)
	}
	if !reflect.DeepEqual(*asked, []bool{false, true}) {
		t.Fatalf("requests streamed: %v, want [false true]", *asked)
	}
}

// A stream cut before message_stop, or carrying an error event, is a
// transient error; the next call streams the whole reply.
func TestStreamCutIsTransient(t *testing.T) {
	srv, _ := sseServer(t, func(n int) []string {
		switch n {
		case 1:
			return streamedMessage[:5]
		case 2:
			return append(streamedMessage[:4:4], "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
		}
		return streamedMessage
	})
	m := streamModel(t, srv.URL)
	var text strings.Builder
	ctx := model.WithDeltas(context.Background(), func(s string) { text.WriteString(s) })
	for i, want := range []string{"ended before the reply was complete", "Overloaded"} {
		resp, err := m.Generate(ctx, toolRequest())
		if fault.ClassOf(err) != fault.Transient || !strings.Contains(err.Error(), want) || resp != nil {
			t.Fatalf("call %d: %v (%s), %+v; want a transient error saying %q", i+1, err, fault.ClassOf(err), resp, want)
		}
		if strings.Contains(err.Error(), "sk-ant-test") {
			t.Fatalf("the key in an error: %v", err)
		}
	}
	text.Reset()
	resp, err := m.Generate(ctx, toolRequest())
	if err != nil || len(resp.ToolCalls) != 2 || text.String() != "Looking that up." {
		t.Fatalf("the call after: %v, %+v, text %q", err, resp, text.String())
	}
}

// Hostile streams are bounded: a block index past the bound and a body
// past the stream limit are format errors read no further.
func TestStreamBounds(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	srv, _ := sseServer(t, func(n int) []string {
		if n == 1 {
			return []string{streamedMessage[0], event("content_block_start", map[string]any{"index": 1_000_000, "content_block": map[string]any{"type": "text", "text": ""}})}
		}
		out := []string{streamedMessage[0], streamedMessage[1]}
		for range 40 {
			out = append(out, event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": big}}))
		}
		return out
	})
	m := streamModel(t, srv.URL)
	got := 0
	ctx := model.WithDeltas(context.Background(), func(s string) { got += len(s) })
	for i, want := range []string{"content block at index 1000000", "passed 32 MiB"} {
		_, err := m.Generate(ctx, toolRequest())
		if fault.ClassOf(err) != fault.Format || !strings.Contains(err.Error(), want) {
			t.Fatalf("call %d: %v (%s), want a format error saying %q", i+1, err, fault.ClassOf(err), want)
		}
	}
	if got > 32<<20 {
		t.Fatalf("%d bytes of text delivered past the limit", got)
	}
}
