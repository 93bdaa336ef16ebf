package flow

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// PolicyTest is a file for `rein policy test`: rules (as in rein.yaml
// policy:) and cases to decide.
//
//	defaults: true
//	rules: [...]
//	cases:
//	  - name: a refund the model computed
//	    tool: {name: refund, effect: external, tags: [money]}
//	    provenance: {/amount: [inferred], /customer: [db]}
//	    verified: [/customer]     # a tool result of the run confirms these
//	    declaration: missing      # a model chose the call: missing, unverified or verified
//	    expect: require_approval
type PolicyTest struct {
	Policy PolicyDecl
	// Sources are the projects named by from: (paths relative to the test
	// file): their rules join the file's own, and their tools can be named.
	Sources []*PolicySource
	Cases   []PolicyCase
}

// Gate is the gate the cases are decided by: the file's own rules joined
// with those of its sources (safety.Join: the most severe decision wins).
func (pt *PolicyTest) Gate() safety.Gate {
	gates := []safety.Gate{pt.Policy.Policy()}
	for _, s := range pt.Sources {
		gates = append(gates, s.Gate)
	}
	return safety.Join(gates...)
}

// AddSource loads path as one more source and gives its declared tools
// to the cases that name a tool without declaring it.
func (pt *PolicyTest) AddSource(path string) error {
	src, err := LoadPolicySource(path)
	if err != nil {
		return err
	}
	pt.Sources = append(pt.Sources, src)
	return pt.resolveTools()
}

// resolveTools fills the spec of every case that names its tool only
// (tool: send_refund) from the sources' declarations.
func (pt *PolicyTest) resolveTools() error {
	for i := range pt.Cases {
		c := &pt.Cases[i]
		if !c.toolByName {
			continue
		}
		for _, s := range pt.Sources {
			if spec, ok := s.Tools[c.Invocation.Tool.Name]; ok {
				c.Invocation.Tool = spec
				c.toolByName = false
				break
			}
		}
	}
	return nil
}

// Unresolved lists the cases whose tool: names a tool no source declares.
func (pt *PolicyTest) Unresolved() []string {
	var out []string
	for _, c := range pt.Cases {
		if c.toolByName {
			out = append(out, fmt.Sprintf("%s (tool %s)", c.Name, c.Invocation.Tool.Name))
		}
	}
	return out
}

// PolicyCase is one invocation to decide, with the verdict expected ("":
// none is checked).
type PolicyCase struct {
	Name       string
	Invocation safety.Invocation
	Expect     safety.Verdict
	Pos        Pos
	// toolByName: tool: gave a name only, to take from a source.
	toolByName bool
}

var policyTestFields = []string{"defaults", "rules", "from", "cases"}

var caseFields = []string{"name", "tool", "args", "provenance", "verified", "declaration", "approved", "tier", "expect"}

var caseToolFields = []string{"name", "effect", "reversibility", "idempotent", "tags"}

// LoadPolicyTest reads a policy test file.
func LoadPolicyTest(path string) (*PolicyTest, error) {
	data, err := yamlnode.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("load policy test: %w", err)
	}
	return ParsePolicyTest(data, path)
}

// ParsePolicyTest parses a policy test file. The error is an *Error
// listing every problem, located.
func ParsePolicyTest(data []byte, filename string) (*PolicyTest, error) {
	d := &decoder{diags: diagnostics{file: filename}, flow: &Flow{}}
	file, err := yamlnode.Parse(data, yamlnode.Limits{What: "policy test", MaxBytes: MaxFileBytes})
	if err != nil {
		d.syntaxError(err)
		return nil, d.result()
	}
	pt := &PolicyTest{}
	if len(file.Docs) == 0 || file.Docs[0].Body == nil {
		d.diags.add(Pos{1, 1}, "", "the policy test is empty: write rules: and cases:")
		return nil, d.result()
	}
	fields, ok := fieldsOf(file.Docs[0].Body)
	if !ok {
		d.diags.add(posOf(file.Docs[0].Body), "", "a policy test must be a mapping with rules: and cases:, not %s", yamlnode.Kind(file.Docs[0].Body))
		return nil, d.result()
	}
	for _, f := range fields {
		switch f.key {
		case "defaults":
			pt.Policy.Defaults, _ = d.boolean(f, "")
		case "rules":
			pt.Policy.Rules = d.decodeRules(f)
		case "cases":
			pt.Cases = d.decodeCases(f)
		case "from":
			var paths []string
			var pos []Pos
			if _, isList := f.value.(*ast.SequenceNode); isList {
				paths, pos, _ = d.strList(f, "")
			} else if p, ok := d.str(f, ""); ok {
				paths, pos = []string{p}, []Pos{posOf(f.value)}
			}
			for j, p := range paths {
				if !filepath.IsAbs(p) {
					p = filepath.Join(filepath.Dir(filename), p)
				}
				src, err := LoadPolicySource(p)
				if err != nil {
					d.diags.add(pos[j], "", "from: %v", err)
					continue
				}
				pt.Sources = append(pt.Sources, src)
			}
		default:
			d.unknownField(f, "", "the policy test", policyTestFields)
		}
	}
	_ = pt.resolveTools()
	if _, ok := fieldByKey(fields, "cases"); !ok {
		d.diags.add(Pos{1, 1}, "", "the policy test has no cases: write cases: [{name: ..., tool: {name: ..., effect: write}, provenance: {/to: [inferred]}, expect: require_approval}]")
	}
	if err := d.result(); err != nil {
		return nil, err
	}
	return pt, nil
}

func (d *decoder) decodeCases(f field) []PolicyCase {
	seq, ok := f.value.(*ast.SequenceNode)
	if !ok {
		d.diags.add(posOf(f.value), "", "cases must be a list of cases, not %s", yamlnode.Kind(f.value))
		return nil
	}
	out := make([]PolicyCase, 0, len(seq.Values))
	for i, n := range seq.Values {
		c := PolicyCase{Name: fmt.Sprintf("case %d", i+1), Pos: posOf(n)}
		fields, ok := fieldsOf(n)
		if !ok {
			d.diags.add(posOf(n), "", "case %d must be a mapping with tool:, not %s", i+1, yamlnode.Kind(n))
			continue
		}
		if nf, ok := fieldByKey(fields, "name"); ok {
			if s, ok := d.str(nf, ""); ok {
				c.Name = s
			}
		}
		where := c.Name
		for _, g := range fields {
			switch g.key {
			case "name":
			case "tool":
				if name, ok := g.value.(*ast.StringNode); ok {
					c.Invocation.Tool, c.toolByName = tool.Spec{Name: name.Value}, true
					continue
				}
				c.Invocation.Tool = d.caseTool(g, where)
			case "args":
				c.Invocation.Args, _ = toValue(g.value)
			case "provenance":
				c.Invocation.Provenance = d.caseProvenance(g, where)
			case "verified":
				ptrs, pos, _ := d.strList(g, "")
				for j, p := range ptrs {
					if p != "" && p[0] != '/' {
						d.diags.add(pos[j], "", "%s: verified lists JSON pointers into the args, like /to, not %q", where, p)
					}
					c.Invocation.Verified = append(c.Invocation.Verified, safety.Verification{Pointer: p, Tool: "(policy test)", Ref: where})
				}
				slices.SortFunc(c.Invocation.Verified, func(a, b safety.Verification) int { return strings.Compare(a.Pointer, b.Pointer) })
			case "declaration":
				if v, ok := d.str(g, ""); ok {
					if !safety.DeclarationState(v).Valid() {
						d.diags.add(posOf(g.value), "", "%s: declaration must be missing, unverified or verified (the state of the declaration of a call a model chose), not %q", where, v)
					}
					caseDeclaration(&c.Invocation, safety.DeclarationState(v))
				}
			case "approved":
				c.Invocation.Approved, _ = d.boolean(g, "")
			case "tier":
				if t, ok := d.integer(g, ""); ok {
					if t < 0 || t > 4 {
						d.diags.add(posOf(g.value), "", "%s: tier must be 1 to 4 (0: not assessed), not %d", where, t)
					}
					c.Invocation.Tier = t
				}
			case "expect":
				if v, ok := d.str(g, ""); ok {
					c.Expect = safety.Verdict(v)
					if !c.Expect.Valid() {
						d.diags.add(posOf(g.value), "", "%s: expect must be allow, block, require_approval or require_review, not %q", where, v)
					}
				}
			default:
				d.unknownField(g, "", where, caseFields)
			}
		}
		if c.Invocation.Tool.Name == "" {
			d.diags.add(c.Pos, "", "%s needs tool: {name: ..., effect: ...}", where)
		}
		out = append(out, c)
	}
	return out
}

// caseDeclaration makes inv a call a model chose whose declaration is in
// state st.
func caseDeclaration(inv *safety.Invocation, st safety.DeclarationState) {
	inv.Chosen = true
	if st == safety.DeclarationMissing {
		return
	}
	fact := safety.Fact{Claim: "(policy test)", Source: "user", Evidence: "(policy test)"}
	inv.Declaration = &safety.Declaration{Action: "(policy test)", Facts: []safety.Fact{fact}}
	inv.Claims = []safety.ClaimVerdict{{Claim: fact.Claim, Supported: st == safety.DeclarationVerified, Evidence: "the case says " + string(st)}}
}

func (d *decoder) caseTool(f field, where string) tool.Spec {
	var s tool.Spec
	fields, ok := fieldsOf(f.value)
	if !ok {
		d.diags.add(posOf(f.value), "", "%s: tool must be a mapping like {name: refund, effect: external, tags: [money]}, not %s", where, yamlnode.Kind(f.value))
		return s
	}
	for _, g := range fields {
		switch g.key {
		case "name":
			s.Name, _ = d.str(g, "")
		case "effect":
			if v, ok := d.str(g, ""); ok {
				if s.Effect = tool.Effect(v); !s.Effect.Valid() {
					d.diags.add(posOf(g.value), "", "%s: effect must be none, read, write, external or destructive, not %q", where, v)
				}
			}
		case "reversibility":
			if v, ok := d.str(g, ""); ok {
				if s.Reversibility = tool.Reversibility(v); !s.Reversibility.Valid() {
					d.diags.add(posOf(g.value), "", "%s: reversibility must be reversible, compensatable or irreversible, not %q", where, v)
				}
			}
		case "idempotent":
			s.Idempotent, _ = d.boolean(g, "")
		case "tags":
			s.Tags, _, _ = d.strList(g, "")
		default:
			d.unknownField(g, "", where+" tool", caseToolFields)
		}
	}
	return s
}

func (d *decoder) caseProvenance(f field, where string) safety.Provenance {
	fields, ok := fieldsOf(f.value)
	if !ok {
		d.diags.add(posOf(f.value), "", "%s: provenance must map argument pointers to origins, like {/to: [inferred]}, not %s", where, yamlnode.Kind(f.value))
		return nil
	}
	p := safety.Provenance{}
	for _, g := range fields {
		if g.key != "" && g.key[0] != '/' {
			d.diags.add(g.keyPos, "", "%s: provenance key %q must be a JSON pointer into the args, like /to (\"\" for the whole args)", where, g.key)
			continue
		}
		list, pos := d.originList(g, where)
		for j, o := range list {
			if !safety.Origin(o).Valid() {
				d.diags.add(pos[j], "", "%s: origin must be user, user-mentioned, constant, inferred, invalidated, db or tool:<name>, not %q", where, o)
				continue
			}
			p.Add(g.key, safety.Origin(o))
		}
	}
	return p
}

// originList reads a list of origins. In a flow sequence YAML reads
// tool:x as a mapping, so that gets a hint to quote it.
func (d *decoder) originList(f field, where string) ([]string, []Pos) {
	if seq, ok := f.value.(*ast.SequenceNode); ok {
		for _, e := range seq.Values {
			if _, isMap := e.(*ast.MappingNode); isMap {
				d.diags.add(posOf(e), "", "%s: write an origin like tool:<name> in quotes (\"tool:render\"): in [...] YAML reads it as a mapping", where)
				return nil, nil
			}
			if _, isMap := e.(*ast.MappingValueNode); isMap {
				d.diags.add(posOf(e), "", "%s: write an origin like tool:<name> in quotes (\"tool:render\"): in [...] YAML reads it as a mapping", where)
				return nil, nil
			}
		}
	}
	list, pos, _ := d.strList(f, "")
	return list, pos
}
