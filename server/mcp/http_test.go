package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/server/mcp"
)

// TestHTTPMalformed posts bodies that are not JSON-RPC: each is refused
// with a client error and the handler goes on serving.
func TestHTTPMalformed(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(newServer(t).Handler())
	defer hs.Close()
	for _, body := range []string{`this is not json`, `{"jsonrpc":"2.0","id":1,"method":`, `{"id":1}`, `[1,2]`} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s: status %d (%s), want a 4xx", body, resp.StatusCode, msg)
		}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatalf("after malformed requests: %v", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Errorf("after malformed requests: %v", err)
	}
}

// TestHTTPBounds: a body nested deeper than MaxDepth, or longer than
// MaxMessageBytes, is refused with a JSON-RPC error (with the id when it
// can be read) before the SDK decodes it, and the session goes on.
func TestHTTPBounds(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(newServer(t).Handler())
	defer hs.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	deep := `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"greet","arguments":{"name":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}}`
	big := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"greet","arguments":{"name":"` + strings.Repeat("a", mcp.MaxMessageBytes) + `"}}}`
	for _, c := range []struct {
		body   string
		status int
		answer string
	}{
		{deep, http.StatusBadRequest, `"id":41,"error":{"code":-32600`},
		{big, http.StatusRequestEntityTooLarge, `"id":null,"error":{"code":-32600`},
	} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(msg), c.answer) {
			t.Errorf("%.40s…: status %d, body %.200s; want %d and %s", c.body, resp.StatusCode, msg, c.status, c.answer)
		}
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil || res.IsError {
		t.Errorf("after refused bodies: %v, %+v", err, res)
	}
}

// TestHTTPIDsExact posts requests whose ids the SDK would re-encode (an
// integer past int64, a fraction, strings with escapes) on a real
// session: each answer carries the id byte for byte as sent; a null id
// is refused with -32600, as on stdio.
func TestHTTPIDsExact(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(newServer(t).Handler())
	defer hs.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	post := func(body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(msg)
	}
	for _, id := range []string{`12345678901234567890`, `1.5`, `-0`, `1e3`, `"a\u0041"`, `"x"`, `7`} {
		for _, req := range []string{
			`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`,
		} {
			status, msg := post(req)
			if status != http.StatusOK || !strings.Contains(msg, `"id":`+id+`,`) && !strings.HasSuffix(strings.TrimSpace(msg), `"id":`+id+`}`) {
				t.Errorf("%s: status %d, answer %.300s; want 200 and the id %s as sent", req, status, msg, id)
			}
		}
	}
	status, msg := post(`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`)
	if status != http.StatusBadRequest || !strings.Contains(msg, `"id":null,"error":{"code":-32600`) {
		t.Errorf("null id: status %d, answer %.300s; want 400 and -32600", status, msg)
	}
	// The session goes on, and the SDK client's own ids still work.
	if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}}); err != nil || res.IsError {
		t.Errorf("after the raw requests: %v, %+v", err, res)
	}
}
