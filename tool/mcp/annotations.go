package mcp

import (
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/tool"
)

// annotate sets the effect of an undeclared server tool from the hints
// its server gives (MCP tool annotations), read as the MCP specification
// defines them: readOnlyHint → read (and safe to repeat); otherwise
// destructiveHint, true unless the server says false → destructive; a
// non-destructive tool is write when openWorldHint is false (it touches
// only the server's own world) and external otherwise; idempotentHint
// makes a non-read tool safe to repeat with the same arguments. Without
// annotations the tool stays external. A rein.yaml declaration of the
// tool replaces all of this (it is applied after).
func annotate(s *tool.Spec, a *sdk.ToolAnnotations) {
	if a == nil {
		return
	}
	switch {
	case a.ReadOnlyHint:
		s.Effect, s.Idempotent = tool.EffectRead, true
		return
	case a.DestructiveHint == nil || *a.DestructiveHint:
		s.Effect = tool.EffectDestructive
	case a.OpenWorldHint != nil && !*a.OpenWorldHint:
		s.Effect = tool.EffectWrite
	default:
		s.Effect = tool.EffectExternal
	}
	s.Idempotent = a.IdempotentHint
}
