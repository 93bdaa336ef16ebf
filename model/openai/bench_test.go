package openai_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/modeltest"
	"github.com/reinhq/rein/model/openai"
)

// BenchmarkAdapterOverhead is one call without the network: request build,
// the SDK's encoding and decoding, and the answer mapped back, against an
// in-process RoundTripper returning a canned completion.
func BenchmarkAdapterOverhead(b *testing.B) {
	for _, bc := range []struct {
		name   string
		schema bool
	}{{"text", false}, {"json_schema", true}} {
		b.Run(bc.name, func(b *testing.B) {
			c := cannedCompletion(b, `{"route":"account","reason":"a double charge","confidence":null}`)
			m, err := openai.New(openai.Config{APIKey: "sk-bench-0123456789", Structured: openai.JSONSchema, HTTPClient: &http.Client{Transport: c}})
			if err != nil {
				b.Fatal(err)
			}
			req := &model.Request{Model: "gpt-4o-mini", StepID: "triage", Messages: []model.Message{
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
