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
