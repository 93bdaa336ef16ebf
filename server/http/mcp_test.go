package http_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
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

// /mcp is the MCP server of the served folders, for tokens of run scope.
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

// headers adds a token and other headers to every request of an MCP client.
type headers struct {
	token string
	extra map[string]string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.token)
	for k, v := range h.extra {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// callText calls a tool and returns its text and whether it is an error.
func callText(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents", name, len(res.Content))
	}
	return res.Content[0].(*sdk.TextContent).Text, res.IsError
}

// A token of run scope uses /mcp for its tenant only: the workflow tool
// records the runs it starts with the tenant, runs_list lists the
// tenant's runs, and another tenant's run is not found by runs_show nor
// by the workflow tool's status — even when the client names another
// tenant in the header the server sets. An admin token sees every run.
func TestMCPPerTenant(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true, mcp: true})
	alice := e.token("alice", "acme", "run")
	gus := e.token("gus", "globex", "run", "approve")
	admin := e.token("ops", "initech", "admin")
	connect := func(token string, extra map[string]string) *sdk.ClientSession {
		t.Helper()
		tr := &sdk.StreamableClientTransport{Endpoint: e.ts.URL + "/mcp", HTTPClient: &http.Client{Transport: headers{token, extra}}}
		// the host's user approves what the gate asks (elicitation).
		opts := &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept"}, nil
		}}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts).Connect(t.Context(), tr, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	theirs := e.start(gus, smallRefund).RunID

	cs := connect(alice, map[string]string{"Rein-Tenant": "globex"})
	text, isErr := callText(t, cs, "refund_workflow", map[string]any{"action": "start", "input": smallRefund["input"]})
	if isErr {
		t.Fatalf("start over MCP: %s", text)
	}
	var started struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(text), &started); err != nil || started.TaskID == "" {
		t.Fatalf("start answered %s (%v)", text, err)
	}
	if v := e.waitStatus(alice, started.TaskID, "succeeded"); v.Run.Tenant != "acme" {
		t.Errorf("the run started over MCP has tenant %q, want acme", v.Run.Tenant)
	}
	if r := e.do("GET", "/v1/runs/"+started.TaskID, gus, nil); r.status != http.StatusNotFound {
		t.Errorf("globex sees acme's run started over MCP: %d", r.status)
	}

	text, _ = callText(t, cs, "runs_list", map[string]any{})
	if !strings.Contains(text, started.TaskID) || strings.Contains(text, theirs) {
		t.Errorf("runs_list for acme: %s; want its run %s and not globex's %s", text, started.TaskID, theirs)
	}
	// the shortest prefix of theirs that is not one of alice's run too.
	n := 0
	for n < len(theirs) && theirs[n] == started.TaskID[n] {
		n++
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"runs_show", map[string]any{"run": theirs}},
		{"runs_show", map[string]any{"run": theirs[:n+1]}},
		{"refund_workflow", map[string]any{"action": "status", "task_id": theirs}},
		{"refund_workflow", map[string]any{"action": "cancel", "task_id": theirs}},
	} {
		text, isErr := callText(t, cs, call.tool, call.args)
		if !isErr || !strings.Contains(text, "not_found") {
			t.Errorf("%s %v of another tenant's run: %s, want not_found", call.tool, call.args, text)
		}
	}
	if v := e.waitStatus(gus, theirs, "succeeded"); v.Run.Tenant != "globex" {
		t.Errorf("globex's run: tenant %q", v.Run.Tenant)
	}

	text, _ = callText(t, connect(admin, nil), "runs_list", map[string]any{})
	if !strings.Contains(text, started.TaskID) || !strings.Contains(text, theirs) {
		t.Errorf("runs_list for an admin: %s; want every tenant's runs", text)
	}
}
