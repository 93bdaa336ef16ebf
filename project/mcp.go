package project

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
	mcptool "github.com/reinhq/rein/tool/mcp"
)

// connectMCP connects to every MCP server cfg names (rein.yaml mcp:), in
// name order, and returns their tools by name ("<server>.<tool>"). The
// sessions close with the project.
func (p *Project) connectMCP(cfg *flow.Config) (map[string]tool.Tool, error) {
	if cfg == nil || len(cfg.MCP) == 0 {
		return nil, nil
	}
	out := map[string]tool.Tool{}
	for _, name := range slices.Sorted(maps.Keys(cfg.MCP)) {
		srv, err := mcptool.Connect(context.Background(), cfg.MCP[name])
		if err != nil {
			return nil, err
		}
		p.closers = append(p.closers, srv.Close)
		for _, t := range srv.Tools() {
			out[t.Spec().Name] = t
		}
	}
	return out, nil
}

// registerMCPTools registers the MCP tools in reg, in name order; a name
// another tool holds is an error.
func registerMCPTools(reg *tool.Registry, tools map[string]tool.Tool) error {
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		if _, taken := reg.Lookup(name); taken {
			return fmt.Errorf("MCP tool %s has the name of another tool (a Go tool or an exec tool): rename that one", name)
		}
		if err := reg.Register(tools[name]); err != nil {
			return err
		}
	}
	return nil
}

// cfgMCP is cfg's mcp: servers; nil without a config.
func cfgMCP(cfg *flow.Config) map[string]*flow.MCPDecl {
	if cfg == nil {
		return nil
	}
	return cfg.MCP
}
