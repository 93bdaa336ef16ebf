package project

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/redact"
)

// AtRestWarnings are the warnings of a project whose rein.yaml has no
// encryption:: one for each step whose output may hold a secret (its tool
// gets a secret variable through pass_env) and that later steps require,
// directly or through others. Its
// output is stored redacted, so a run resumed after it reads [REDACTED]
// there where the live run read the secret. Nil with encryption:, or when
// no step is such.
func (p *Project) AtRestWarnings() []flow.Diagnostic { return p.atRest }

func atRestWarnings(f *flow.Flow, decls map[string]*flow.ToolDecl, cfg *flow.Config) []flow.Diagnostic {
	var named []string
	var mcp map[string]*flow.MCPDecl
	if cfg != nil {
		named, mcp = cfg.Secrets, cfg.MCP
	}
	var out []flow.Diagnostic
	for _, s := range f.Steps {
		if s.Tool == "" {
			continue
		}
		var pass []string
		if d := decls[s.Tool]; d != nil {
			pass = d.PassEnv
		} else if server, _, ok := strings.Cut(s.Tool, "."); ok && mcp[server] != nil {
			pass = mcp[server].PassEnv
		}
		var secret []string
		for _, n := range pass {
			if redact.SecretName(strings.TrimSuffix(n, "*")) || slices.Contains(named, n) {
				secret = append(secret, n)
			}
		}
		if len(secret) == 0 {
			continue
		}
		var readers []string
		for _, later := range f.Steps {
			if f.IsUpstream(later, s.ID) {
				readers = append(readers, later.ID)
			}
		}
		if len(readers) == 0 {
			continue
		}
		out = append(out, flow.Diagnostic{File: f.File, Line: s.Pos.Line, Col: s.Pos.Col, Step: s.ID, Warning: true,
			Message: fmt.Sprintf("its tool %s gets %s through pass_env, so its output may hold a secret, and %s %s run after it: "+
				"the output is stored redacted, and a run resumed after %s reads [REDACTED] where the live run read the secret; "+
				"name a key in rein.yaml encryption: to store such outputs encrypted, so a resume reads what the live run read",
				s.Tool, strings.Join(secret, ", "), plural(len(readers)), strings.Join(readers, ", "), s.ID)})
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return "step"
	}
	return "steps"
}
