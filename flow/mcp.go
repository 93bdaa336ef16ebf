package flow

import (
	"net/url"
	"strings"
	"time"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/tool"
)

// MCPDecl is one entry of rein.yaml mcp:, an external MCP server whose
// tools flows, plans and agents call as "<server>.<tool>":
//
//	mcp:
//	  crm:
//	    command: [./crm-mcp, --readonly]   # or url: https://crm.example/mcp
//	    pass_env: [CRM_TOKEN]
//	    timeout: 20s
//	    tools:
//	      find_customer: {effect: read, idempotent: true}
//	      create_customer:
//	        effect: write
//	        reversibility: compensatable
//	        compensate: {tool: crm.archive_customer, args: {id: "{output.id}"}}
//	        resources: ["crm:customer/{output.id}"]
//	        tags: [user-facing]
//
// Exactly one of Command (a program speaking MCP on stdio, started with an
// explicit environment like an exec tool's) and URL (a streamable-HTTP
// endpoint) is set.
type MCPDecl struct {
	Name    string
	Command []string
	// Dir is the folder of the rein.yaml: a relative program resolves
	// against it and the server runs in it.
	Dir     string
	Env     map[string]string
	PassEnv []string
	URL     string
	// Timeout bounds one tool call; 0 means DefaultToolTimeout.
	Timeout time.Duration
	// Tools declare what the server's tools do, by their name on the
	// server. A tool not declared here, or declared without effect:, has
	// effect external.
	Tools map[string]*MCPToolDecl
	File  string
	Pos   Pos
}

// MCPToolDecl is what rein.yaml says one MCP tool does: the fields of an
// exec tool's declaration that say so (EffectDecl). Its compensation
// names a registered tool: a tool of the same server by its full name,
// <server>.<tool>.
type MCPToolDecl struct {
	EffectDecl
	Pos Pos
}

var mcpFields = []string{"command", "url", "env", "pass_env", "timeout", "tools"}

func (d *decoder) decodeMCP(fl field, dir string) map[string]*MCPDecl {
	out := map[string]*MCPDecl{}
	entries, ok := fieldsOf(fl.value)
	if !ok {
		if !isNull(fl.value) {
			d.diags.add(posOf(fl.value), "", "mcp must map server names to {command: [...]} or {url: ...}, not %s", yamlnode.Kind(fl.value))
		}
		return out
	}
	for _, e := range entries {
		if msg := yamlnode.NameProblem(e.key); msg != "" || strings.ContainsAny(e.key, ". ") {
			d.diags.add(e.keyPos, "", "mcp server name %q must be plain text without dots or spaces: its tools are called <server>.<tool>", e.key)
			continue
		}
		if m := d.decodeMCPServer(e, dir); m != nil {
			out[e.key] = m
		}
	}
	return out
}

func (d *decoder) decodeMCPServer(e field, dir string) *MCPDecl {
	where := "mcp server " + e.key
	fields, ok := fieldsOf(e.value)
	if !ok {
		d.diags.add(posOf(e.value), "", "%s must be a mapping with command: or url:, not %s", where, yamlnode.Kind(e.value))
		return nil
	}
	m := &MCPDecl{Name: e.key, Dir: dir, File: d.diags.file, Pos: e.keyPos, Tools: map[string]*MCPToolDecl{}}
	for _, f := range fields {
		switch f.key {
		case "command":
			m.Command = d.command(f, where)
		case "url":
			if v, ok := d.str(f, ""); ok {
				u, err := url.Parse(v)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					d.diags.add(posOf(f.value), "", "%s: url must be an http:// or https:// URL of a streamable-HTTP MCP endpoint, not %q", where, v)
				}
				m.URL = v
			}
		case "env":
			m.Env = d.env(f, where)
		case "pass_env":
			m.PassEnv = d.envNames(f, where+": pass_env", true)
		case "timeout":
			if v, ok := d.duration(f, ""); ok {
				if v <= 0 {
					d.diags.add(posOf(f.value), "", "%s: timeout must be positive", where)
				}
				m.Timeout = v
			}
		case "tools":
			d.decodeMCPTools(f, m, where)
		default:
			d.unknownField(f, "", where, mcpFields)
		}
	}
	switch {
	case m.Command == nil && m.URL == "":
		d.diags.add(e.keyPos, "", "%s needs command: [program, args...] (a server on stdio) or url: (a streamable-HTTP endpoint)", where)
		return nil
	case m.Command != nil && m.URL != "":
		d.diags.add(e.keyPos, "", "%s has both command: and url:: give one", where)
		return nil
	case m.URL != "" && (m.Env != nil || m.PassEnv != nil):
		d.diags.add(e.keyPos, "", "%s: env: and pass_env: are for a command: server, not a url: one", where)
	}
	return m
}

func (d *decoder) decodeMCPTools(fl field, m *MCPDecl, where string) {
	entries, ok := fieldsOf(fl.value)
	if !ok {
		if !isNull(fl.value) {
			d.diags.add(posOf(fl.value), "", "%s: tools must map the server's tool names to {effect, reversibility, idempotent, undo, compensate, resources, tags}, not %s", where, yamlnode.Kind(fl.value))
		}
		return
	}
	for _, e := range entries {
		tw := where + " tool " + e.key
		fields, ok := fieldsOf(e.value)
		if !ok {
			d.diags.add(posOf(e.value), "", "%s must be a mapping like {effect: read}, not %s", tw, yamlnode.Kind(e.value))
			continue
		}
		t := &MCPToolDecl{Pos: e.keyPos, EffectDecl: EffectDecl{Effect: tool.EffectExternal}}
		for _, f := range fields {
			if !d.decodeEffect(&t.EffectDecl, f, tw) {
				d.unknownField(f, "", tw, effectFields)
			}
		}
		d.checkEffect(&t.EffectDecl, e.keyPos, tw)
		m.Tools[e.key] = t
	}
}
