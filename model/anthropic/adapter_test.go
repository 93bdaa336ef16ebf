package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/anthropic"
	"github.com/reinhq/rein/model/modeltest"
)

// canned is an in-process http.RoundTripper: it records the request body
// and answers every request with status and body.
type canned struct {
	status int
	body   []byte

	mu   sync.Mutex
	sent []byte
}

func (c *canned) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	_ = r.Body.Close()
	c.mu.Lock()
	c.sent = b
	c.mu.Unlock()
	return &http.Response{
		StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json"}}, Request: r,
		Body: io.NopCloser(bytes.NewReader(c.body)), ContentLength: int64(len(c.body)),
	}, nil
}

func cannedMessage(t testing.TB, stop string, content ...any) *canned {
	t.Helper()
	body, err := json.Marshal(message(modeltest.Reply{Model: "claude-sonnet-4-5-20250929", In: 2095, Out: 503}, stop, content...))
	if err != nil {
		t.Fatal(err)
	}
	return &canned{status: 200, body: body}
}

func newCanned(t *testing.T, c *canned, cfg anthropic.Config) *anthropic.Model {
	t.Helper()
	cfg.HTTPClient = &http.Client{Transport: c}
	if cfg.APIKey == "" {
		cfg.APIKey = "sk-ant-test-0123456789"
	}
	m, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ask(name string) *model.Request {
	return &model.Request{Model: name, Messages: []model.Message{{Role: model.User, Content: "hi"}}}
}

func TestMaxTokensAndModel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ cfg, want int }{{0, anthropic.DefaultMaxTokens}, {64000, 64000}} {
		c := cannedMessage(t, "end_turn", textBlock("ok"))
		m := newCanned(t, c, anthropic.Config{Model: "claude-sonnet-4-5", MaxTokens: tt.cfg})
		if _, err := m.Generate(context.Background(), ask("default")); err != nil {
			t.Fatalf("max_tokens %d: %v", tt.cfg, err)
		}
		var sent struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
		}
		_ = json.Unmarshal(c.sent, &sent)
		if sent.MaxTokens != tt.want || sent.Model != "claude-sonnet-4-5" {
			t.Errorf("sent model %q max_tokens %d, want the configured claude-sonnet-4-5 and %d", sent.Model, sent.MaxTokens, tt.want)
		}
	}
}

func TestUsageCountsCachedInput(t *testing.T) {
	t.Parallel()
	msg := message(modeltest.Reply{Model: "m", In: 10, Out: 3}, "end_turn", textBlock("ok"))
	msg["usage"].(map[string]any)["cache_read_input_tokens"] = 100
	msg["usage"].(map[string]any)["cache_creation_input_tokens"] = 20
	body, _ := json.Marshal(msg)
	resp, err := newCanned(t, &canned{status: 200, body: body}, anthropic.Config{}).Generate(context.Background(), ask("m"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage != (model.Usage{In: 130, Out: 3}) {
		t.Errorf("Usage %+v, want In 130 (input + cache writes + cache reads), Out 3", resp.Usage)
	}
}

func TestStructuredWrappedRootAndText(t *testing.T) {
	t.Parallel()
	c := cannedMessage(t, "tool_use",
		textBlock("Here is the list."),
		map[string]any{"type": "tool_use", "id": "toolu_01", "name": anthropic.AnswerTool, "input": map[string]any{"value": []string{"Tokyo", "Osaka"}}})
	req := ask("m")
	req.Schema = json.RawMessage(`{"type":"array","items":{"$ref":"#/$defs/city"},"$defs":{"city":{"type":"string"}}}`)
	resp, err := newCanned(t, c, anthropic.Config{}).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `["Tokyo","Osaka"]` {
		t.Errorf("Text %s, want the tool input unwrapped", resp.Text)
	}
	var sent struct {
		Tools []struct {
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(c.sent, &sent)
	is := sent.Tools[0].InputSchema
	if is["type"] != "object" || is["$defs"] == nil || is["properties"].(map[string]any)["value"] == nil {
		t.Errorf("input_schema %v, want an object wrapping the array, $defs at its root", is)
	}
}

func TestContextWindowIsFormat(t *testing.T) {
	t.Parallel()
	c := cannedMessage(t, "model_context_window_exceeded", textBlock("partial"))
	_, err := newCanned(t, c, anthropic.Config{}).Generate(context.Background(), ask("m"))
	if fault.ClassOf(err) != fault.Format || !strings.Contains(err.Error(), "context window") {
		t.Errorf("error %v (%s), want a format error about the context window", err, fault.ClassOf(err))
	}
}

func TestOverloadedIsTransient(t *testing.T) {
	t.Parallel()
	c := &canned{status: 529, body: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}
	_, err := newCanned(t, c, anthropic.Config{}).Generate(context.Background(), ask("m"))
	if fault.ClassOf(err) != fault.Transient || !strings.Contains(err.Error(), "Overloaded") {
		t.Errorf("529: %v (%s), want transient with the message", err, fault.ClassOf(err))
	}
}

func TestBadRequestsRejectedBeforeSending(t *testing.T) {
	t.Parallel()
	c := cannedMessage(t, "end_turn", textBlock("ok"))
	m := newCanned(t, c, anthropic.Config{})
	for name, req := range map[string]*model.Request{
		"no model":    ask(""),
		"only system": {Model: "m", Messages: []model.Message{{Role: model.System, Content: "x"}}},
		"bad role":    {Model: "m", Messages: []model.Message{{Role: "tool", Content: "x"}}},
		"bad schema":  {Model: "m", Messages: []model.Message{{Role: model.User, Content: "x"}}, Schema: json.RawMessage(`{"type":`)},
	} {
		if _, err := m.Generate(context.Background(), req); fault.ClassOf(err) != fault.Business {
			t.Errorf("%s: %v, want a business error", name, err)
		}
	}
	if c.sent != nil {
		t.Errorf("a request was sent: %s", c.sent)
	}
	for _, cfg := range []anthropic.Config{{BaseURL: "api.anthropic.com"}, {MaxTokens: -1}} {
		if _, err := anthropic.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
