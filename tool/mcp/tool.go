package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/tool"
)

// remoteTool is one tool of an MCP server.
type remoteTool struct {
	srv    *Server
	remote string
	spec   tool.Spec
}

func (t *remoteTool) Spec() tool.Spec { return t.spec }

// Call calls the server tool with args (a JSON object; nil is {}). The
// answer is the result's structured content, else its text (parsed when
// it is JSON). A result marked as an error is a business error carrying
// its text (transient when its structured content says "retryable":
// true); no answer within the timeout is a transient error.
func (t *remoteTool) Call(ctx context.Context, args any) (any, error) {
	if args == nil {
		args = map[string]any{}
	}
	cs, err := t.srv.current(ctx)
	if err != nil {
		return nil, err
	}
	ctx, span, meta := startCall(ctx, t.srv.decl.Name, t.remote)
	out, err := t.call(ctx, cs, args, meta)
	endCall(span, err)
	return out, err
}

// call makes the tools/call request, with meta as its _meta.
func (t *remoteTool) call(ctx context.Context, cs *sdk.ClientSession, args any, meta sdk.Meta) (any, error) {
	cctx, cancel := context.WithTimeout(ctx, t.srv.timeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Meta: meta, Name: t.remote, Arguments: args})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case cctx.Err() != nil:
		return nil, fault.TransientErr(fmt.Errorf("MCP server %s did not answer within %s (rein.yaml mcp: %s timeout:)", t.srv.decl.Name, t.srv.timeout, t.srv.decl.Name))
	case isGone(err):
		said := t.srv.lost(cs)
		return nil, fault.BusinessErr(fmt.Errorf("MCP server %s ended during the call (%v)%s: whether the call took effect is unknown; the next call starts the server again", t.srv.decl.Name, err, said)) //nolint:errorlint // the transport's error is text: the call fails as business
	default:
		return nil, fault.BusinessErr(fmt.Errorf("MCP server %s refused the call: %w", t.srv.decl.Name, err))
	}
	if res.IsError {
		return nil, toolError(res)
	}
	if res.StructuredContent != nil {
		return res.StructuredContent, nil
	}
	text := resultText(res)
	var v any
	if json.Unmarshal([]byte(text), &v) == nil {
		return v, nil
	}
	return text, nil
}

// toolError is a result marked as an error: a business error with its
// text, unless the error says {"retryable": true} (as rein's own MCP
// server does for transient errors), which makes it transient. The object
// is read from the structured content or, when there is none (rein's
// server sends an error as text only), from the text.
func toolError(res *sdk.CallToolResult) error {
	text := resultText(res)
	err := errors.New(text)
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		_ = json.Unmarshal([]byte(text), &m) // text that is not an object: no retryable flag
	}
	if m["retryable"] == true {
		return fault.TransientErr(err)
	}
	return fault.BusinessErr(err)
}

// resultText joins the result's text contents.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
