package http_test

import (
	"net/http"
	"slices"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// /mcp is the MCP server of the served folders, for admin tokens only.
func TestMCPBehindTokens(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true, mcp: true})
	admin := e.token("ops", "acme", "admin")
	reader := e.token("rita", "acme", "read")
	connect := func(token string) (*sdk.ClientSession, error) {
		tr := &sdk.StreamableClientTransport{Endpoint: e.ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}
		return sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(t.Context(), tr, nil)
	}
	cs, err := connect(admin)
	if err != nil {
		t.Fatalf("an admin token: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools.Tools, func(x *sdk.Tool) bool { return x.Name == "refund_workflow" }) {
		t.Errorf("tools at /mcp lack refund_workflow")
	}
	if cs, err := connect(reader); err == nil {
		cs.Close()
		t.Errorf("a read token connected to /mcp")
	}
	if cs, err := connect("rein_forged"); err == nil {
		cs.Close()
		t.Errorf("a forged token connected to /mcp")
	}
}
