package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/modeltest"
	"github.com/reinhq/rein/model/openai"
)

// A reply nested millions deep must not overflow the stack when the
// adapter maps a wrapped answer back: it comes back as it is, for the
// engine's validation to reject.
func TestDeeplyNestedReply(t *testing.T) {
	t.Parallel()
	content := `{"value":` + strings.Repeat("[", 8<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, completion(modeltest.Reply{Model: "m"}, content, nil, "stop"))
	}))
	defer srv.Close()
	m, _ := openai.New(openai.Config{BaseURL: srv.URL, Structured: openai.JSONSchema})
	req := ask("m")
	req.Schema = json.RawMessage(`{"type":"array"}`)
	resp, err := m.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Text) != len(content) {
		t.Errorf("Text is %d bytes, want the reply as it came (%d)", len(resp.Text), len(content))
	}
	if _, err := model.ParseJSON[any](resp.Text, nil); err == nil {
		t.Error("ParseJSON accepted a truncated, deeply nested reply")
	}
}
