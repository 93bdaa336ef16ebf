package anthropic

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/internal/httperr"
)

// streamEvent is the part of a Messages stream event the adapter reads
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming):
// message_start carries the message (model, input usage), content_block_start
// a block (text, or tool_use with its id and name), content_block_delta a
// text_delta or an input_json_delta (a piece of a tool's input),
// message_delta the stop reason and the output usage, message_stop the end.
type streamEvent struct {
	Type         string          `json:"type"`
	Message      json.RawMessage `json:"message"`
	Index        int             `json:"index"`
	ContentBlock struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta struct {
		Type        string         `json:"type"`
		Text        string         `json:"text"`
		PartialJSON string         `json:"partial_json"`
		StopReason  sdk.StopReason `json:"stop_reason"`
		StopDetails *struct {
			Explanation string `json:"explanation"`
		} `json:"stop_details"`
	} `json:"delta"`
	Usage *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// stream sends params as a streamed Messages call, hands each text_delta
// to fn as it arrives, and assembles the events into the message the
// unstreamed call decodes, so the Response (text, tool calls, usage,
// errors) is the same. A stream that ends before message_stop, or an
// error event (overloaded_error, api_error), is a transient error; one
// past httperr.MaxStreamBytes, or with a block past the bound, a format
// error.
func (m *Model) stream(ctx context.Context, name string, params sdk.MessageNewParams, ps *preparedSchema, fn model.DeltaFunc) (*model.Response, error) {
	var httpResp *http.Response
	var body httperr.StreamBody
	s := m.svc.NewStreaming(ctx, params, option.WithResponseInto(&httpResp), option.WithMiddleware(body.Middleware))
	defer s.Close()
	var (
		msg    message
		inputs [][]byte // each tool_use block's input_json_delta pieces
		done   bool
	)
	for s.Next() {
		var ev streamEvent
		if err := json.Unmarshal([]byte(s.Current().RawJSON()), &ev); err != nil {
			return nil, fault.Errorf(fault.Transient, "anthropic: %s: a stream event is not JSON: %v", name, err)
		}
		switch ev.Type {
		case "message_start":
			if err := json.Unmarshal(ev.Message, &msg); err != nil {
				return nil, fault.Errorf(fault.Transient, "anthropic: %s: message_start: %v", name, err)
			}
			msg.Content = msg.Content[:0]
		case "content_block_start", "content_block_delta":
			if ev.Index < 0 || ev.Index > 2*model.MaxToolCalls {
				return nil, fault.Errorf(fault.Format, "anthropic: %s: the streamed reply holds a content block at index %d; at most %d blocks are taken", name, ev.Index, 2*model.MaxToolCalls)
			}
			for len(msg.Content) <= ev.Index {
				msg.Content = append(msg.Content, block{})
				inputs = append(inputs, nil)
			}
			b := &msg.Content[ev.Index]
			if ev.Type == "content_block_start" {
				cb := ev.ContentBlock
				b.Type, b.Text, b.ID, b.Name, b.Input = cb.Type, cb.Text, cb.ID, cb.Name, cb.Input
				if cb.Text != "" {
					fn(cb.Text)
				}
				continue
			}
			switch ev.Delta.Type {
			case "text_delta":
				b.Text += ev.Delta.Text
				if ev.Delta.Text != "" {
					fn(ev.Delta.Text)
				}
			case "input_json_delta":
				inputs[ev.Index] = append(inputs[ev.Index], ev.Delta.PartialJSON...)
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				msg.StopReason = ev.Delta.StopReason
			}
			if ev.Delta.StopDetails != nil {
				msg.StopDetails.Explanation = ev.Delta.StopDetails.Explanation
			}
			if u := ev.Usage; u != nil {
				// message_delta's usage is cumulative; input counts when sent
				msg.Usage.OutputTokens = u.OutputTokens
				if u.InputTokens != 0 || u.CacheCreationInputTokens != 0 || u.CacheReadInputTokens != 0 {
					msg.Usage.InputTokens, msg.Usage.CacheCreationInputTokens, msg.Usage.CacheReadInputTokens = u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens
				}
			}
		case "message_stop":
			done = true
		}
	}
	if err := s.Err(); err != nil {
		if httperr.IsStreamTooLong(err) {
			return nil, fault.Errorf(fault.Format, "anthropic: %s: %v", name, err)
		}
		return nil, m.api.Fail(ctx, name, httpResp, err)
	}
	if body.JSON != nil {
		// a server that ignored stream: true answered the whole reply
		var whole message
		if err := json.Unmarshal(body.JSON, &whole); err != nil {
			return nil, m.api.Fail(ctx, name, httpResp, err)
		}
		for _, b := range whole.Content {
			if b.Type == "text" && b.Text != "" {
				fn(b.Text)
			}
		}
		return m.response(name, &whole, ps)
	}
	if !done {
		return nil, fault.Errorf(fault.Transient, "anthropic: %s: the stream ended before the reply was complete (no message_stop); asking again may help", name)
	}
	for i, in := range inputs {
		if len(in) > 0 {
			msg.Content[i].Input = in
		}
	}
	return m.response(name, &msg, ps)
}
