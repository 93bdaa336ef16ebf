package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestSpansNameRein_yamlProviders: the chat spans of models rein.yaml
// declares say their provider as the GenAI conventions name it — anthropic
// for an anthropic entry, openai for an OpenAI-compatible server (ollama)
// — not the "rein" a bare model name got before. The models are stand-ins
// speaking the providers' wire formats (Chat Completions, Messages).
func TestSpansNameRein_yamlProviders(t *testing.T) {
	// not parallel: it sets the environment rein reads.
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1741569952,"model":"tiny",
				"choices":[{"index":0,"message":{"role":"assistant","content":"a draft"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`)
		case strings.HasSuffix(r.URL.Path, "/v1/messages"):
			fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test",
				"content":[{"type":"text","text":"a review"}],"stop_reason":"end_turn","stop_sequence":null,
				"usage":{"input_tokens":5,"output_tokens":2}}`)
		default:
			http.Error(w, `{"error": {"message": "unexpected request"}}`, http.StatusNotFound)
		}
	}))
	defer llm.Close()
	col, providers := spanCollector(t)
	dir := t.TempDir()
	files := map[string]string{
		"flow.yaml": `name: providers
steps:
  - {id: draft, type: llm, model: writer, prompt_template: "draft a note"}
  - {id: review, type: llm, model: critic, requires: [draft], prompt_template: "review {draft}"}
`,
		"rein.yaml": "models:\n  writer: {provider: ollama, model: tiny, base_url: " + llm.URL + "/v1}\n" +
			"  critic: {provider: anthropic, model: claude-test, base_url: " + llm.URL + ", api_key_env: REIN_TEST_PROVIDER_KEY}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("REIN_TEST_PROVIDER_KEY", "sk-ant-test-not-a-key")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col)
	if code, out, stderr := cli(t, "run", dir, "--db", filepath.Join(t.TempDir(), "rein.db")); code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	if got := providers(); got["chat tiny"] != "openai" || got["chat claude-test"] != "anthropic" {
		t.Fatalf("the chat spans name providers %v, want chat tiny: openai, chat claude-test: anthropic", got)
	}
}

// spanCollector is an OTLP/HTTP trace collector: its URL, and the spans
// it has received so far by name, each with its gen_ai.provider.name ("" for
// a span without one).
func spanCollector(t *testing.T) (string, func() map[string]string) {
	t.Helper()
	var mu sync.Mutex
	spans := map[string]string{}
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans[s.Name] += ""
					for _, kv := range s.Attributes {
						if kv.Key == "gen_ai.provider.name" {
							spans[s.Name] = kv.Value.GetStringValue()
						}
					}
				}
			}
		}
	}))
	t.Cleanup(col.Close)
	return col.URL, func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(spans)
	}
}
