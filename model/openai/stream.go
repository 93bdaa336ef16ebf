package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/internal/httperr"
)

// stream sends params as a streamed chat completion (stream: true, with
// stream_options.include_usage), hands each piece of the reply's text to
// fn as it arrives, and assembles the chunks into the completion the
// unstreamed call decodes, so the Response (text, tool calls, usage,
// errors) is the same. A stream that ends before a finish_reason, or is
// cut off, is a transient error; one past httperr.MaxStreamBytes, or with
// a tool call past model.MaxToolCalls, a format error.
func (m *Model) stream(ctx context.Context, name string, params sdk.ChatCompletionNewParams, sh shape, fn model.DeltaFunc) (*model.Response, error) {
	params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	var httpResp *http.Response
	var body httperr.StreamBody
	s := m.svc.NewStreaming(ctx, params, option.WithResponseInto(&httpResp), option.WithMiddleware(body.Middleware))
	defer s.Close()
	var (
		c       completion
		text    strings.Builder
		refusal strings.Builder
		calls   []*streamedCall
		done    bool
	)
	for s.Next() {
		ch := s.Current()
		if ch.Model != "" {
			c.Model = ch.Model
		}
		if ch.Usage.PromptTokens != 0 || ch.Usage.CompletionTokens != 0 {
			c.Usage.PromptTokens, c.Usage.CompletionTokens = ch.Usage.PromptTokens, ch.Usage.CompletionTokens
		}
		for _, choice := range ch.Choices {
			if choice.Index != 0 {
				continue // only the first choice is asked for (n is not sent)
			}
			d := choice.Delta
			if d.Content != "" {
				text.WriteString(d.Content)
				fn(d.Content)
			}
			refusal.WriteString(d.Refusal)
			for _, tc := range d.ToolCalls {
				if tc.Index < 0 || tc.Index > model.MaxToolCalls {
					return nil, fault.Errorf(fault.Format, "openai: %s: the streamed reply holds a tool call at index %d; at most %d calls are taken", name, tc.Index, model.MaxToolCalls)
				}
				for int64(len(calls)) <= tc.Index {
					calls = append(calls, &streamedCall{})
				}
				sc := calls[tc.Index]
				sc.id += tc.ID
				sc.typ += tc.Type
				sc.name += tc.Function.Name
				sc.args.WriteString(tc.Function.Arguments)
			}
			if choice.FinishReason != "" {
				c.Choices = []choiceOf{{FinishReason: choice.FinishReason}}
				done = true
			}
		}
	}
	if err := s.Err(); err != nil {
		if httperr.IsStreamTooLong(err) {
			return nil, fault.Errorf(fault.Format, "openai: %s: %v", name, err)
		}
		return nil, m.api.Fail(ctx, name, httpResp, err)
	}
	if body.JSON != nil {
		// a server that ignored stream: true answered the whole reply
		var whole completion
		if err := json.Unmarshal(body.JSON, &whole); err != nil {
			return nil, m.api.Fail(ctx, name, httpResp, err)
		}
		if len(whole.Choices) > 0 && whole.Choices[0].Message.Content != "" {
			fn(whole.Choices[0].Message.Content)
		}
		return m.response(name, &whole, sh)
	}
	if !done {
		return nil, fault.Errorf(fault.Transient, "openai: %s: the stream ended before the reply was complete (no finish_reason); asking again may help", name)
	}
	msg := &c.Choices[0].Message
	msg.Content, msg.Refusal = text.String(), refusal.String()
	for _, sc := range calls {
		var tc toolCall
		tc.ID, tc.Type, tc.Function.Name = sc.id, sc.typ, sc.name
		tc.Function.Arguments, _ = json.Marshal(sc.args.String())
		msg.ToolCalls = append(msg.ToolCalls, tc)
	}
	return m.response(name, &c, sh)
}

// streamedCall is a tool call assembled from its deltas: the id, type and
// name come in the first (some servers repeat them), the arguments' text
// in pieces.
type streamedCall struct {
	id, typ, name string
	args          strings.Builder
}
