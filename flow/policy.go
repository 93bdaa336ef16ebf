package flow

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// PolicyDecl is rein.yaml policy:, the rules of the policy gate:
//
//	policy:
//	  defaults: true          # safety.DefaultRules, before the rules below
//	  rules:
//	    - name: no-model-refunds
//	      tools: [refund]
//	      provenance: [inferred]
//	      verdict: block
//	      reason: refunds are never computed by a model
type PolicyDecl struct {
	Defaults bool
	Rules    []safety.Rule
	Pos      Pos
}

// Policy returns the gate the declaration describes.
func (p *PolicyDecl) Policy() *safety.Policy {
	var rules []safety.Rule
	if p.Defaults {
		rules = safety.DefaultRules()
	}
	return &safety.Policy{Rules: append(rules, p.Rules...)}
}

// WantsTiers reports whether the policy needs risk tiers assessed: it
// includes the default rules or a rule that reads the tier (min_tier).
func (p *PolicyDecl) WantsTiers() bool {
	if p == nil {
		return false
	}
	if p.Defaults {
		return true
	}
	for i := range p.Rules {
		if p.Rules[i].MinTier > 0 {
			return true
		}
	}
	return false
}

var policyFields = []string{"defaults", "rules"}

var policyRuleFields = []string{"name", "tools", "effects", "reversibility", "tags", "provenance", "unverified", "declaration", "min_tier", "when", "verdict", "reason", "enforce"}

// decodePolicy reads policy:.
func (d *decoder) decodePolicy(fl field) *PolicyDecl {
	p := &PolicyDecl{Pos: fl.keyPos}
	fields, ok := fieldsOf(fl.value)
	if !ok {
		d.diags.add(posOf(fl.value), "", "policy must be a mapping like {defaults: true, rules: [...]}, not %s", yamlnode.Kind(fl.value))
		return nil
	}
	for _, f := range fields {
		switch f.key {
		case "defaults":
			p.Defaults, _ = d.boolean(f, "")
		case "rules":
			p.Rules = d.decodeRules(f)
		default:
			d.unknownField(f, "", "policy", policyFields)
		}
	}
	return p
}

// decodeRules reads a list of rules; names must be unique.
func (d *decoder) decodeRules(f field) []safety.Rule {
	seq, ok := f.value.(*ast.SequenceNode)
	if !ok {
		if !isNull(f.value) {
			d.diags.add(posOf(f.value), "", "rules must be a list of rules like {name: ..., effects: [write], verdict: require_approval}, not %s", yamlnode.Kind(f.value))
		}
		return nil
	}
	seen := map[string]bool{}
	for _, r := range safety.DefaultRules() {
		seen[r.Name] = true
	}
	var out []safety.Rule
	for i, n := range seq.Values {
		r, ok := d.decodeRule(n, i)
		if !ok {
			continue
		}
		if seen[r.Name] {
			d.diags.add(posOf(n), "", "rule %q: the name is taken (by another rule or a default rule): give each rule a name of its own", r.Name)
			continue
		}
		seen[r.Name] = true
		out = append(out, r)
	}
	return out
}

func (d *decoder) decodeRule(n ast.Node, i int) (safety.Rule, bool) {
	var r safety.Rule
	fields, ok := fieldsOf(n)
	if !ok {
		d.diags.add(posOf(n), "", "rule %d must be a mapping with name: and verdict:, not %s", i+1, yamlnode.Kind(n))
		return r, false
	}
	where := fmt.Sprintf("rule %d", i+1)
	if f, ok := fieldByKey(fields, "name"); ok {
		if r.Name, ok = d.str(f, ""); ok {
			if !idPattern.MatchString(r.Name) {
				d.diags.add(posOf(f.value), "", "%s: name %q must start with a letter or _ and hold only letters, digits, _ and -", where, r.Name)
			}
			where = "rule " + r.Name
		}
	}
	good := true
	bad := func(f field, format string, args ...any) {
		d.diags.add(posOf(f.value), "", "%s: "+format, append([]any{where}, args...)...)
		good = false
	}
	for _, f := range fields {
		switch f.key {
		case "name":
		case "tools":
			r.Tools, _, _ = d.strList(f, "")
		case "effects":
			list, pos, _ := d.strList(f, "")
			for j, e := range list {
				if !tool.Effect(e).Valid() || e == "" {
					d.diags.add(pos[j], "", "%s: effect must be none, read, write, external or destructive, not %q", where, e)
					good = false
				}
				r.Effects = append(r.Effects, tool.Effect(e))
			}
		case "reversibility":
			list, pos, _ := d.strList(f, "")
			for j, e := range list {
				if !tool.Reversibility(e).Valid() || e == "" {
					d.diags.add(pos[j], "", "%s: reversibility must be reversible, compensatable or irreversible, not %q", where, e)
					good = false
				}
				r.Reversibility = append(r.Reversibility, tool.Reversibility(e))
			}
		case "tags":
			r.Tags, _, _ = d.strList(f, "")
		case "provenance":
			if _, isMap := fieldsOf(f.value); isMap {
				var ok bool
				if r.Arguments, ok = d.decodeArgOrigins(f, where); !ok {
					good = false
				}
				continue
			}
			list, pos := d.originList(f, where)
			for j, e := range list {
				if o := safety.Origin(e); !o.Valid() && e != "tool:*" {
					d.diags.add(pos[j], "", "%s: provenance must be user, user-mentioned, constant, inferred, invalidated, db, tool:<name> or tool:*, not %q", where, e)
					good = false
				}
				r.Provenance = append(r.Provenance, safety.Origin(e))
			}
		case "unverified":
			r.Unverified, _ = d.boolean(f, "")
		case "declaration":
			list, pos, _ := d.strList(f, "")
			for j, e := range list {
				if st := safety.DeclarationState(e); !st.Valid() {
					d.diags.add(pos[j], "", "%s: declaration must be missing, unverified or verified, not %q", where, e)
					good = false
				}
				r.Declaration = append(r.Declaration, safety.DeclarationState(e))
			}
		case "min_tier":
			if t, ok := d.integer(f, ""); ok {
				if t < 1 || t > 4 {
					bad(f, "min_tier must be a risk tier from 1 to 4, not %d", t)
				}
				r.MinTier = t
			}
		case "verdict":
			if v, ok := d.str(f, ""); ok {
				r.Verdict = safety.Verdict(v)
				if !r.Verdict.Valid() {
					bad(f, "verdict must be block, require_approval, require_review or allow, not %q", v)
				}
			}
		case "when":
			if r.When = d.decodeWhen(f, where); r.When == nil {
				good = false
			}
		case "enforce":
			if on, ok := d.boolean(f, ""); ok {
				r.LogOnly = !on
			}
		case "reason":
			r.Reason, _ = d.str(f, "")
		default:
			d.unknownRuleField(f, where)
		}
	}
	if r.Name == "" {
		d.diags.add(posOf(n), "", "%s needs a name: (it is shown with every decision the rule makes)", where)
		good = false
	}
	if r.Verdict == "" {
		d.diags.add(posOf(n), "", "%s needs a verdict: (block, require_approval, require_review or allow)", where)
		good = false
	}
	if f, ok := fieldByKey(fields, "unverified"); ok && r.Unverified && len(r.Provenance) == 0 {
		bad(f, "unverified: true narrows a provenance: condition to the arguments no tool result confirms; add provenance: [inferred] (or the origins it is about)")
	}
	return r, good
}

// unknownRuleField reports a field a rule does not take: the near one
// when there is one, else every field a rule takes.
func (d *decoder) unknownRuleField(f field, where string) {
	hint := didYouMean(f.key, policyRuleFields)
	if hint == "" {
		hint = " (a rule takes " + strings.Join(policyRuleFields, ", ") + ")"
	}
	d.diags.add(f.keyPos, "", "unknown field %q in %s%s", f.key, where, hint)
}
