package flow

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/tool"
)

// decodeCompensation reads a tool's undo: or compensate:, e.g.
//
//	compensate: {tool: archive_customer, args: {id: "{output.id}"}}
//
// The args' templates may read args.… (the original call's args) and
// output.… (its output).
func (d *decoder) decodeCompensation(f field, where string) *tool.Compensation {
	fields, ok := fieldsOf(f.value)
	if !ok {
		d.diags.add(posOf(f.value), "", "%s: %s must be a mapping like {tool: archive_customer, args: {id: \"{output.id}\"}}, not %s", where, f.key, yamlnode.Kind(f.value))
		return nil
	}
	c := &tool.Compensation{}
	for _, g := range fields {
		switch g.key {
		case "tool":
			c.Tool, _ = d.str(g, "")
		case "args":
			tv := d.args(g.value, "", where+" "+f.key+" args")
			if tv == nil {
				continue
			}
			d.effectScope(tv.Refs(), g.value, where+" "+f.key+" args")
			c.Args, _ = toValue(g.value)
		default:
			d.unknownField(g, "", where+" "+f.key, []string{"tool", "args"})
		}
	}
	if c.Tool == "" {
		d.diags.add(posOf(f.value), "", "%s: %s needs tool: (the registered tool that takes the effect back)", where, f.key)
		return nil
	}
	return c
}

// effectScope checks that templates over a call read only args.… and output.….
func (d *decoder) effectScope(refs []template.ValueRef, n ast.Node, what string) {
	for _, r := range refs {
		if root := r.Path[0].Key; root != "args" && root != "output" {
			d.diags.add(posAt(nodeAt(n, r.Pointer), r.Offset), "", "%s%s: {%s} is not known here: templates over a call read {args.…} (its args) and {output.…} (its output)", what, r.Pointer, r.Path)
		}
	}
}

// decodeResources reads a tool's resources: a list of templates over the call.
func (d *decoder) decodeResources(f field, where string) []string {
	seq, ok := f.value.(*ast.SequenceNode)
	if !ok {
		d.diags.add(posOf(f.value), "", "%s: resources must be a list of templates like \"crm:customer/{output.id}\", not %s", where, yamlnode.Kind(f.value))
		return nil
	}
	out := make([]string, 0, len(seq.Values))
	for _, e := range seq.Values {
		s, ok := d.str(field{key: "resources entry", value: e}, "")
		if !ok {
			continue
		}
		t, err := template.Parse(s)
		if err != nil {
			d.diags.add(posOf(e), "", "%s: resource %q: %v", where, s, err)
			continue
		}
		for _, r := range t.Refs() {
			if root := r.Path[0].Key; root != "args" && root != "output" {
				d.diags.add(posAt(e, r.Offset), "", "%s: resource %q: {%s} is not known here: resources read {args.…} and {output.…}", where, s, r.Path)
			}
		}
		out = append(out, s)
	}
	return out
}

// decodeTags reads a tool's tags: plain names.
func (d *decoder) decodeTags(f field, where string) []string {
	tags, pos, ok := d.strList(f, "")
	if !ok {
		return nil
	}
	for i, t := range tags {
		if !idPattern.MatchString(t) {
			d.diags.add(pos[i], "", "%s: tag %q must start with a letter or _ and hold only letters, digits, _ and - (like money, user-facing, compliance)", where, t)
		}
	}
	return tags
}

// CheckEffects checks the undo and compensate declarations of every tool
// of reg: each names a registered tool, and its args fit that tool's
// input schema as far as they can be known before a call (required
// fields present, no field the schema does not allow, constant values of
// the right shape); and its verifies: entries, each a field its output
// schema has (when the schema says). decls (exec tools) and servers (rein.yaml mcp:, whose
// tools are registered as <server>.<tool>) locate the declared tools'
// problems; either may be nil. The error lists every problem: an *Error
// when all are located, else one line each.
func CheckEffects(reg *tool.Registry, decls map[string]*ToolDecl, servers map[string]*MCPDecl) error {
	var diags []Diagnostic
	for _, name := range reg.Names() {
		t, _ := reg.Lookup(name)
		spec := t.Spec()
		file, decl := declOf(name, decls, servers)
		for _, c := range []struct {
			key string
			c   *tool.Compensation
			at  func(*EffectDecl) Pos
		}{{"undo", spec.Undo, func(e *EffectDecl) Pos { return e.undoAt }}, {"compensate", spec.Compensate, func(e *EffectDecl) Pos { return e.compensateAt }}} {
			if c.c == nil {
				continue
			}
			for _, msg := range checkCompensation(reg, name, c.c) {
				dg := Diagnostic{Message: fmt.Sprintf("tool %s: %s: %s", name, c.key, msg)}
				if decl != nil {
					at := c.at(decl.effect)
					if at.Line == 0 {
						at = decl.pos
					}
					dg.File, dg.Line, dg.Col = file, at.Line, at.Col
				}
				diags = append(diags, dg)
			}
		}
		for _, p := range checkVerifies(&spec) {
			dg := Diagnostic{Message: fmt.Sprintf("tool %s: verifies: %s", name, p.msg)}
			if decl != nil {
				at := decl.pos
				if p.index < len(decl.effect.verifiesAt) {
					at = decl.effect.verifiesAt[p.index]
				}
				dg.File, dg.Line, dg.Col = file, at.Line, at.Col
			}
			diags = append(diags, dg)
		}
	}
	if len(diags) == 0 {
		return nil
	}
	if slices.ContainsFunc(diags, func(d Diagnostic) bool { return d.File == "" }) {
		// Go tools have no place in a file: name them only.
		lines := make([]string, len(diags))
		for i, d := range diags {
			lines[i] = d.Message
			if d.File != "" {
				lines[i] = d.String()
			}
		}
		return errors.New(strings.Join(lines, "\n"))
	}
	return &Error{Diagnostics: diags}
}

// declared is a tool's effect declaration and where it is.
type declared struct {
	effect *EffectDecl
	pos    Pos
}

// declOf finds the declaration of the registered tool name: an exec
// tool's, or an MCP server's tool's (<server>.<tool>); nil for a Go tool.
func declOf(name string, decls map[string]*ToolDecl, servers map[string]*MCPDecl) (string, *declared) {
	if d := decls[name]; d != nil {
		return d.File, &declared{&d.EffectDecl, d.Pos}
	}
	server, remote, ok := strings.Cut(name, ".")
	if m := servers[server]; ok && m != nil {
		if d := m.Tools[remote]; d != nil {
			return m.File, &declared{&d.EffectDecl, d.Pos}
		}
	}
	return "", nil
}

// checkCompensation returns what is wrong with c, the undo or compensate
// of the tool owner.
func checkCompensation(reg *tool.Registry, owner string, c *tool.Compensation) []string {
	t, ok := reg.Lookup(c.Tool)
	if !ok {
		hint := didYouMean(c.Tool, reg.Names())
		if server, _, isMCP := strings.Cut(owner, "."); isMCP {
			if _, sib := reg.Lookup(server + "." + c.Tool); sib {
				hint = fmt.Sprintf(" (a tool of the same MCP server is named with its server: %s.%s)", server, c.Tool)
			}
		}
		return []string{fmt.Sprintf("tool %q is not registered%s; declare it in rein.yaml tools:, name a tool of a rein.yaml mcp: server as <server>.<tool>, or register it in Go", c.Tool, hint)}
	}
	var probs []string
	for _, p := range fitArgs(c.Tool, t.Spec().InputSchema, c.Args, nil) {
		probs = append(probs, p.msg)
	}
	return probs
}

// isConstant reports whether v has no placeholders.
func isConstant(v any) bool {
	switch x := v.(type) {
	case string:
		return !strings.Contains(x, "{")
	case map[string]any:
		for _, e := range x {
			if !isConstant(e) {
				return false
			}
		}
	case []any:
		return !slices.ContainsFunc(x, func(e any) bool { return !isConstant(e) })
	}
	return true
}
