package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/server/mcp"
	"github.com/reinhq/rein/tool"
	mcptool "github.com/reinhq/rein/tool/mcp"
)

type sumIn struct {
	A, B float64
}

// TestStreamableHTTP: rein's MCP server on an httptest server, reached
// through a url: declaration.
func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	sum := tool.Typed(tool.Spec{Name: "sum", Description: "Adds.", Effect: tool.EffectNone},
		func(_ context.Context, in sumIn) (map[string]float64, error) {
			return map[string]float64{"sum": in.A + in.B}, nil
		})
	busy := tool.Func(tool.Spec{Name: "busy"}, func(context.Context, any) (any, error) {
		return nil, fault.TransientErr(errors.New("try later"))
	})
	srv, err := mcp.New(context.Background(), nil, &mcp.Options{Tools: []tool.Tool{sum, busy}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	decl := &flow.MCPDecl{Name: "calc", URL: hs.URL, File: "rein.yaml", Tools: map[string]*flow.MCPToolDecl{"sum": {EffectDecl: flow.EffectDecl{Effect: tool.EffectNone, Idempotent: true}}}}
	c, err := mcptool.Connect(context.Background(), decl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tools := c.Tools()
	if len(tools) != 2 || tools[0].Spec().Name != "calc.busy" || tools[1].Spec().Name != "calc.sum" {
		t.Fatalf("tools = %v", tools)
	}
	if s := tools[1].Spec(); s.Effect != tool.EffectNone || !s.Idempotent || !strings.Contains(string(s.InputSchema), `"A"`) {
		t.Errorf("calc.sum spec = %+v %s", s, s.InputSchema)
	}
	out, err := tools[1].Call(context.Background(), map[string]any{"A": 2, "B": 3})
	if err != nil || fmt.Sprint(out) != "map[sum:5]" {
		t.Errorf("sum = %v, %v", out, err)
	}
	_, err = tools[0].Call(context.Background(), nil)
	if err == nil || fault.ClassOf(err) != fault.Transient || !strings.Contains(err.Error(), `"error_type":"transient"`) {
		t.Errorf("busy: %v (class %s)", err, fault.ClassOf(err))
	}
	// A server that is gone: the call says so.
	hs.Close()
	if _, err := tools[1].Call(context.Background(), map[string]any{"A": 1, "B": 1}); err == nil || !strings.Contains(err.Error(), "MCP server calc") {
		t.Errorf("after the server closed: %v", err)
	}
}
