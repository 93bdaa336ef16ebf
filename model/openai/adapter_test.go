package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/modeltest"
	"github.com/reinhq/rein/model/openai"
)

// canned is an in-process http.RoundTripper: it records the request body
// and answers every request with status and body.
type canned struct {
	status int
	header http.Header
	body   []byte

	mu   sync.Mutex
	sent []byte
	req  *http.Request
}

func (c *canned) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	_ = r.Body.Close()
	c.mu.Lock()
	c.sent, c.req = b, r
	c.mu.Unlock()
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range c.header {
		h[k] = v
	}
	return &http.Response{
		StatusCode: c.status, Header: h, Request: r,
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)),
	}, nil
}

func cannedCompletion(t testing.TB, content string) *canned {
	t.Helper()
	r := modeltest.Reply{Model: "gpt-4o-mini-2024-07-18", In: 19, Out: 10}
	body, err := json.Marshal(completion(r, content, nil, "stop"))
	if err != nil {
		t.Fatal(err)
	}
	return &canned{status: 200, body: body}
}

func sentJSON(t *testing.T, c *canned) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(c.sent, &v); err != nil {
		t.Fatalf("request body: %v: %s", err, c.sent)
	}
	return v
}

func ask(name string) *model.Request {
	return &model.Request{Model: name, Messages: []model.Message{{Role: "user", Content: "hi"}}}
}

func TestDefaultsFollowTheServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base, tokensField, format string
	}{
		{"", "max_completion_tokens", "json_schema"},
		{"https://api.deepseek.com", "max_tokens", "json_object"},
		{"http://localhost:11434/v1", "max_tokens", "json_object"},
	}
	for _, tt := range tests {
		t.Run(tt.base, func(t *testing.T) {
			t.Parallel()
			c := cannedCompletion(t, `{"route":"account","reason":"r"}`)
			m, err := openai.New(openai.Config{BaseURL: tt.base, APIKey: "k-123456", MaxTokens: 256, HTTPClient: &http.Client{Transport: c}})
			if err != nil {
				t.Fatal(err)
			}
			req := ask("gpt-4o-mini")
			req.Schema = modeltest.Schema
			if _, err := m.Generate(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			sent := sentJSON(t, c)
			if sent[tt.tokensField] != 256.0 {
				t.Errorf("request %s, want %s: 256", c.sent, tt.tokensField)
			}
			if rf, _ := sent["response_format"].(map[string]any); rf["type"] != tt.format {
				t.Errorf("response_format %v, want type %s", rf, tt.format)
			}
			wantHost := "api.openai.com"
			if tt.base != "" {
				wantHost = strings.Split(strings.TrimPrefix(strings.TrimPrefix(tt.base, "https://"), "http://"), "/")[0]
			}
			if c.req.URL.Host != wantHost || !strings.HasSuffix(c.req.URL.Path, "/chat/completions") {
				t.Errorf("posted to %s, want %s/…/chat/completions", c.req.URL, wantHost)
			}
		})
	}
}

func TestConfigModelWins(t *testing.T) {
	t.Parallel()
	c := cannedCompletion(t, "ok")
	m, err := openai.New(openai.Config{Model: "deepseek-chat", HTTPClient: &http.Client{Transport: c}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), ask("default")); err != nil {
		t.Fatal(err)
	}
	if got := sentJSON(t, c)["model"]; got != "deepseek-chat" {
		t.Errorf("model %v, want the configured deepseek-chat (the request names a config entry)", got)
	}
	if auth := c.req.Header.Get("Authorization"); auth != "" {
		t.Errorf("Authorization %q sent without a key", auth)
	}
	m, _ = openai.New(openai.Config{HTTPClient: &http.Client{Transport: c}})
	if _, err := m.Generate(context.Background(), ask("")); fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model anywhere: %v, want a business error saying so", err)
	}
}

func TestWrappedRootRoundTrip(t *testing.T) {
	t.Parallel()
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		writeJSON(w, 200, completion(modeltest.Reply{Model: "m"}, `{"value":["Tokyo","Osaka"]}`, nil, "stop"))
	}))
	defer srv.Close()
	m, _ := openai.New(openai.Config{BaseURL: srv.URL, Structured: openai.JSONSchema})
	req := ask("m")
	req.Schema = json.RawMessage(`{"type":"array","items":{"type":"string"}}`)
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `["Tokyo","Osaka"]` {
		t.Errorf("Text %s, want the unwrapped array", resp.Text)
	}
	js := got["response_format"].(map[string]any)["json_schema"].(map[string]any)
	if props := js["schema"].(map[string]any)["properties"].(map[string]any); props["value"] == nil {
		t.Errorf("schema %v, want the array wrapped under value", js["schema"])
	}
}

// Compatible servers word their errors differently; the message must
// survive and the class follow the status.
func TestCompatibleErrorBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		status     int
		class      fault.Class
		want       string
	}{
		{"vllm", `{"object":"error","message":"The model 'llama' does not exist.","type":"NotFoundError","param":null,"code":404}`, 404, fault.Business, "The model 'llama' does not exist."},
		{"lmstudio", `{"error":"Unexpected endpoint or method. (POST /v1/chat/completion)"}`, 400, fault.Business, "Unexpected endpoint or method."},
		{"fastapi", `{"detail":"Not authenticated"}`, 401, fault.Business, "Not authenticated"},
		{"proxy", `<html><body>502 Bad Gateway</body></html>`, 502, fault.Transient, "502 Bad Gateway"},
		{"ollama", `{"error":{"message":"model \"llama3.2\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`, 404, fault.Business, "try pulling it first"},
		{"timeout", `{"error":{"message":"Request timed out."}}`, 408, fault.Transient, "Request timed out."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &canned{status: tt.status, body: []byte(tt.body)}
			m, _ := openai.New(openai.Config{BaseURL: "http://localhost:8000/v1", HTTPClient: &http.Client{Transport: c}, APIKeyEnv: "VLLM_API_KEY"})
			_, err := m.Generate(context.Background(), ask("llama"))
			if fault.ClassOf(err) != tt.class || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v (%s), want %s holding %q", err, fault.ClassOf(err), tt.class, tt.want)
			}
			// the whole body rides as the error's detail, for the trace's cause chain
			if kind, body := fault.DetailOf(err); kind != fault.DetailResponseBody || body != tt.body {
				t.Errorf("detail %s %q, want the response body %q", kind, body, tt.body)
			}
			if tt.status == 401 && !strings.Contains(err.Error(), "VLLM_API_KEY") {
				t.Errorf("401 error %q does not name VLLM_API_KEY", err)
			}
		})
	}
}

func TestContentFilterAndNoChoices(t *testing.T) {
	t.Parallel()
	r := modeltest.Reply{Model: "m", In: 5, Out: 0}
	filtered, _ := json.Marshal(completion(r, nil, nil, "content_filter"))
	empty, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "model": "m", "choices": []any{}})
	for name, tc := range map[string]struct {
		body  []byte
		class fault.Class
	}{"content_filter": {filtered, fault.Business}, "no_choices": {empty, fault.Format}} {
		m, _ := openai.New(openai.Config{HTTPClient: &http.Client{Transport: &canned{status: 200, body: tc.body}}})
		if _, err := m.Generate(context.Background(), ask("m")); fault.ClassOf(err) != tc.class {
			t.Errorf("%s: %v (%s), want %s", name, err, fault.ClassOf(err), tc.class)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []openai.Config{
		{BaseURL: "localhost:11434"},
		{BaseURL: "ftp://example.com"},
		{Structured: "xml"},
	} {
		if _, err := openai.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
