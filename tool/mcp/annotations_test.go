package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
	mcptool "github.com/reinhq/rein/tool/mcp"
)

// TestAnnotationsDeclareUndeclaredTools: a server's tool annotations
// become the effect of a tool rein.yaml does not declare (the MCP
// specification's defaults: not read-only and no destructiveHint means
// destructive); no annotations stay external; a declaration wins.
func TestAnnotationsDeclareUndeclaredTools(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	srv := sdk.NewServer(&sdk.Implementation{Name: "hints", Version: "1"}, nil)
	add := func(name string, a *sdk.ToolAnnotations) {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: a},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
			})
	}
	add("lookup", &sdk.ToolAnnotations{ReadOnlyHint: true})
	add("wipe", &sdk.ToolAnnotations{DestructiveHint: &yes})
	add("titled", &sdk.ToolAnnotations{Title: "Only a title"})
	add("note", &sdk.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &no, IdempotentHint: true})
	add("mail", &sdk.ToolAnnotations{DestructiveHint: &no})
	add("bare", nil)
	add("declared", &sdk.ToolAnnotations{DestructiveHint: &yes})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer hs.Close()
	decl := &flow.MCPDecl{Name: "h", URL: hs.URL, File: "rein.yaml",
		Tools: map[string]*flow.MCPToolDecl{"declared": {EffectDecl: flow.EffectDecl{Effect: tool.EffectRead, Idempotent: true}}}}
	c, err := mcptool.Connect(context.Background(), decl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := map[string]struct {
		effect     tool.Effect
		idempotent bool
	}{
		"h.lookup":   {tool.EffectRead, true},
		"h.wipe":     {tool.EffectDestructive, false},
		"h.titled":   {tool.EffectDestructive, false},
		"h.note":     {tool.EffectWrite, true},
		"h.mail":     {tool.EffectExternal, false},
		"h.bare":     {tool.EffectExternal, false},
		"h.declared": {tool.EffectRead, true},
	}
	got := 0
	for _, tl := range c.Tools() {
		s := tl.Spec()
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("unexpected tool %s", s.Name)
			continue
		}
		got++
		if s.Effect != w.effect || s.Idempotent != w.idempotent {
			t.Errorf("%s: effect %s idempotent %v, want %s %v", s.Name, s.Effect, s.Idempotent, w.effect, w.idempotent)
		}
	}
	if got != len(want) {
		t.Errorf("got %d tools, want %d", got, len(want))
	}
}
