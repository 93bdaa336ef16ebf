package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
