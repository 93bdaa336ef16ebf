package anthropic_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/anthropic"
	"github.com/reinhq/rein/model/modeltest"
)

// BenchmarkAdapterOverhead is one call without the network: request build,
// the SDK's encoding and decoding, and the answer read back, against an
// in-process RoundTripper returning a canned message.
func BenchmarkAdapterOverhead(b *testing.B) {
	for _, bc := range []struct {
		name   string
		schema bool
	}{{"text", false}, {"tool_use", true}} {
		b.Run(bc.name, func(b *testing.B) {
			c := cannedMessage(b, "end_turn", textBlock("Bonjour."))
			if bc.schema {
				c = cannedMessage(b, "tool_use", map[string]any{"type": "tool_use", "id": "toolu_01", "name": anthropic.AnswerTool, "input": modeltest.Answer})
			}
			m, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-bench-0123456789", HTTPClient: &http.Client{Transport: c}})
			if err != nil {
				b.Fatal(err)
			}
			req := &model.Request{Model: "claude-sonnet-4-5", StepID: "triage", Messages: []model.Message{
				{Role: model.System, Content: "Reply with one JSON value only, no prose."},
				{Role: model.User, Content: "I think I was charged twice this month"},
			}}
			if bc.schema {
				req.Schema = modeltest.Schema
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Generate(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
