package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/tool"
)

// structuredErr is an error that carries its own JSON, as the workflow
// tools' errors do.
type structuredErr struct{ Pointer string }

func (e *structuredErr) Error() string { return "bad submission at " + e.Pointer }
func (e *structuredErr) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"error_type": "business", "message": e.Error(), "pointer": e.Pointer, "retryable": false})
}

type greetIn struct {
	Name string `json:"name"`
}
type greetOut struct {
	Greeting string `json:"greeting"`
}

func testTools() []tool.Tool {
	greet := tool.Typed(tool.Spec{Name: "greet", Description: "Greets someone.", Effect: tool.EffectNone},
		func(_ context.Context, in greetIn) (greetOut, error) {
			return greetOut{Greeting: "hello " + in.Name}, nil
		})
	submit := tool.Func(tool.Spec{Name: "submit", Description: "Always refuses.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, any) (any, error) { return nil, &structuredErr{Pointer: "/score"} })
	flaky := tool.Func(tool.Spec{Name: "flaky"},
		func(context.Context, any) (any, error) {
			return nil, fault.TransientErr(errors.New("upstream is busy"))
		})
	wipe := tool.Func(tool.Spec{Name: "wipe", Effect: tool.EffectDestructive},
		func(context.Context, any) (any, error) { panic("the gate should have stopped this call") })
	return []tool.Tool{greet, submit, flaky, wipe}
}

// noDestructive blocks destructive tools: a call that reaches one proves
// the pipeline's gate was skipped.
type noDestructive struct{}

func (noDestructive) Check(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
	if inv.Tool.Effect == tool.EffectDestructive {
		return safety.Decision{Verdict: safety.Block, Reason: "destructive tools are off"}, nil
	}
	return safety.Decision{Verdict: safety.Allow}, nil
}

func newServer(t *testing.T) *mcp.Server {
	t.Helper()
	s, err := newServerErr()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newServerErr() (*mcp.Server, error) {
	return mcp.New(context.Background(), nil, &mcp.Options{Tools: testTools(), Gate: noDestructive{}})
}

func connectInMemory(t *testing.T, s *mcp.Server) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	done := make(chan error, 1)
	sctx, cancel := context.WithCancel(ctx)
	go func() { done <- s.Run(sctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done //nolint:errcheck // Run ends with the cancellation, which says nothing
	})
	return cs
}

func connectHTTP(t *testing.T, s *mcp.Server) *sdk.ClientSession {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestServer(t *testing.T) {
	t.Parallel()
	for name, connect := range map[string]func(*testing.T, *mcp.Server) *sdk.ClientSession{"in-memory": connectInMemory, "streamable-http": connectHTTP} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkSession(t, connect(t, newServer(t)))
		})
	}
}

// checkSession lists the tools and calls each kind of tool over cs.
func checkSession(t *testing.T, cs *sdk.ClientSession) {
	ctx := context.Background()
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range listed.Tools {
		byName[tl.Name] = tl
	}
	if len(byName) != 4 {
		t.Fatalf("tools = %v, want greet, submit, flaky, wipe", byName)
	}
	g := byName["greet"]
	schemaJSON, _ := json.Marshal(g.InputSchema)
	if g.Description != "Greets someone." || !strings.Contains(string(schemaJSON), `"name"`) || !strings.Contains(string(schemaJSON), `"required":["name"]`) {
		t.Errorf("greet = %q, input schema %s", g.Description, schemaJSON)
	}
	if g.OutputSchema == nil || !g.Annotations.ReadOnlyHint || *byName["wipe"].Annotations.DestructiveHint != true {
		t.Errorf("greet output schema %v, annotations %+v; wipe %+v", g.OutputSchema, g.Annotations, byName["wipe"].Annotations)
	}
	if s, _ := json.Marshal(byName["flaky"].InputSchema); string(s) != `{"type":"object"}` {
		t.Errorf("flaky input schema = %s, want any object", s)
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(res) != `{"greeting":"hello Ada"}` || structured(t, res)["greeting"] != "hello Ada" {
		t.Errorf("greet: error %v, text %s, structured %v", res.IsError, text(res), res.StructuredContent)
	}

	cases := []struct {
		tool string
		args any
		want map[string]any
		msg  string
	}{
		{"submit", map[string]any{}, map[string]any{"error_type": "business", "pointer": "/score", "retryable": false}, "bad submission at /score"},
		{"flaky", nil, map[string]any{"error_type": "transient", "retryable": true}, "upstream is busy"},
		{"wipe", nil, map[string]any{"error_type": "policy", "retryable": false}, "destructive tools are off"},
		{"greet", map[string]any{"name": 7}, map[string]any{"error_type": "business", "retryable": false}, "args for tool greet"},
	}
	for _, c := range cases {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		got := errorObject(t, res)
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", c.tool, k, got[k], v)
			}
		}
		if msg, _ := got["message"].(string); !strings.Contains(msg, c.msg) {
			t.Errorf("%s: message %q, want it to say %q", c.tool, msg, c.msg)
		}
	}

	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "nosuch"}); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown tool: err = %v, want a protocol error naming it", err)
	}
}

func text(res *sdk.CallToolResult) string {
	if len(res.Content) != 1 {
		return ""
	}
	tc, _ := res.Content[0].(*sdk.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// errorObject checks that res is an MCP tool error sent as text only (no
// structured content, which a client would check against the tool's
// output schema: greet has one) and returns the JSON object of its text.
func errorObject(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	if !res.IsError {
		t.Errorf("IsError is false: %s", text(res))
	}
	if res.StructuredContent != nil {
		t.Errorf("an error has structured content %v; want text only", res.StructuredContent)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text(res)), &m); err != nil {
		t.Fatalf("error text %q is not a JSON object: %v", text(res), err)
	}
	return m
}

// structured decodes the result's structured content, whatever Go type
// the transport left it as.
func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	arr := tool.Func(tool.Spec{Name: "arr", InputSchema: json.RawMessage(`{"type":"array"}`)}, nil)
	dup := tool.Func(tool.Spec{Name: "greet"}, nil)
	for _, c := range []struct {
		tools []tool.Tool
		want  string
	}{
		{[]tool.Tool{arr}, `tool arr: its input schema must have "type": "object"`},
		{append(testTools(), dup), `tool "greet" is given twice`},
	} {
		if _, err := mcp.New(context.Background(), nil, &mcp.Options{Tools: c.tools}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: err = %v, want %q", err, c.want)
		}
	}
}

// TestServerRedacts: a secret in an answer or an error leaves the
// server masked, in the text and in the structured content alike.
func TestServerRedacts(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-very-secret"
	leak := tool.Func(tool.Spec{Name: "leak"}, func(context.Context, any) (any, error) {
		return map[string]any{"token": secret}, nil
	})
	fail := tool.Func(tool.Spec{Name: "fail"}, func(context.Context, any) (any, error) {
		return nil, errors.New("login with " + secret + " refused")
	})
	s, err := mcp.New(context.Background(), nil, &mcp.Options{Tools: []tool.Tool{leak, fail}, Redactor: redact.New(secret)})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, s)
	for _, name := range []string{"leak", "fail"} {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), secret) || !strings.Contains(text(res), redact.Mask) {
			t.Errorf("%s: %s", name, b)
		}
	}
}
