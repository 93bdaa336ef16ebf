package flow

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/flow/template"
	"github.com/reinhq/rein/internal/route"
	"github.com/reinhq/rein/internal/yamlnode"
)

// RouteSpec is what a `type: route` step routes with: rules first, then
// the semantic router (the step's model:) over the closed set of routes.
type RouteSpec struct {
	// Text renders the request text (text:, default "{input.text}").
	Text   *template.Template
	Routes []route.Route
	Rules  []route.Rule
	// Fallback is the route for requests no rule matches when the step
	// has no model (fallback_route:).
	Fallback string
	// File is the routes file the routes came from, when routes: named one.
	File string
	// where each inline route and rule starts, for located messages.
	routePos, rulePos []Pos
}

// PlanSpec is what a `type: plan` step plans with.
type PlanSpec struct {
	// Goal renders the planner's goal (goal:).
	Goal *template.Template
	// Tools are the operations the plan may use (tools:).
	Tools []string
	// MaxSteps bounds one plan's length, MaxReplans the replans after a
	// failed step, MaxExecuted the plan steps executed in all.
	MaxSteps    int
	MaxReplans  int
	MaxExecuted int
}

// Defaults of plan steps.
const (
	DefaultPlanMaxSteps   = 10
	DefaultPlanMaxReplans = 2
)

var ruleFields = []string{"prefix", "regexp", "expr"}

func (d *decoder) routeSpec(s *Step) *RouteSpec {
	if s.RouteSpec == nil {
		s.RouteSpec = &RouteSpec{}
	}
	return s.RouteSpec
}

func (d *decoder) planSpec(s *Step) *PlanSpec {
	if s.PlanSpec == nil {
		s.PlanSpec = &PlanSpec{MaxSteps: DefaultPlanMaxSteps, MaxReplans: DefaultPlanMaxReplans}
	}
	return s.PlanSpec
}

// decodeRoutes reads routes: — a routes file (the format of `rein route`)
// or an inline list of {name, description, rules}.
func (d *decoder) decodeRoutes(s *Step, f field, label string) {
	rs := d.routeSpec(s)
	if path, ok := f.value.(*ast.StringNode); ok {
		p := path.Value
		if !filepath.IsAbs(p) {
			p = filepath.Join(d.schemas.dir, p)
		}
		var file *route.File
		data, err := d.readFile(p)
		if err == nil {
			file, err = route.Parse(p, data)
		}
		if err != nil {
			d.diags.add(posOf(f.value), label, "routes: %v", err)
			return
		}
		rs.Routes, rs.Rules, rs.File = file.Routes, file.Rules, p
		if file.Fallback != "" && rs.Fallback == "" {
			rs.Fallback = file.Fallback
		}
		return
	}
	seq, ok := f.value.(*ast.SequenceNode)
	if !ok {
		d.diags.add(posOf(f.value), label, "routes must be a list of {name, description, rules} or a routes file, not %s", yamlnode.Kind(f.value))
		return
	}
	for k, n := range seq.Values {
		fields, ok := fieldsOf(n)
		if !ok {
			d.diags.add(posOf(n), label, "routes[%d] must be a mapping {name, description, rules}, not %s", k, yamlnode.Kind(n))
			continue
		}
		var r route.Route
		var rules []ast.Node
		for _, rf := range fields {
			switch rf.key {
			case "name":
				r.Name, _ = d.str(rf, label)
			case "description":
				r.Description, _ = d.str(rf, label)
			case "rules":
				rseq, ok := rf.value.(*ast.SequenceNode)
				if !ok {
					d.diags.add(posOf(rf.value), label, "routes[%d].rules must be a list of {prefix|regexp|expr: ...}, not %s", k, yamlnode.Kind(rf.value))
					continue
				}
				rules = rseq.Values
			default:
				d.unknownField(rf, label, "route", []string{"name", "description", "rules"})
			}
		}
		if r.Name == "" {
			d.diags.add(posOf(n), label, "routes[%d] needs a name", k)
			continue
		}
		rs.Routes = append(rs.Routes, r)
		rs.routePos = append(rs.routePos, posOf(n))
		for _, rn := range rules {
			rfields, ok := fieldsOf(rn)
			if !ok || len(rfields) != 1 {
				d.diags.add(posOf(rn), label, "a rule of route %s is one of {prefix: TEXT}, {regexp: RE2} or {expr: EXPRESSION}", r.Name)
				continue
			}
			rf := rfields[0]
			v, ok := d.str(rf, label)
			if !ok {
				continue
			}
			rule := route.Rule{Route: r.Name}
			switch rf.key {
			case "prefix":
				rule.Prefix = v
			case "regexp":
				rule.Regexp = v
			case "expr":
				rule.Expr = v
			default:
				d.unknownField(rf, label, "rule", ruleFields)
				continue
			}
			rs.Rules = append(rs.Rules, rule)
			rs.rulePos = append(rs.rulePos, posOf(rf.value))
		}
	}
}

// checkRoute builds the step's router once (without its semantic part) so
// a bad regexp, expression or route name is a load error.
func (d *decoder) checkRoute(s *Step, src *stepSrc, label string) {
	rs := s.RouteSpec
	pos := s.Pos
	if f, ok := src.fields["routes"]; ok {
		pos = posOf(f.value)
	}
	if rs == nil || len(rs.Routes) == 0 {
		d.diags.add(pos, label, "a route step needs routes: (a list of {name, description, rules}, or a routes file)")
		return
	}
	if rs.Text == nil {
		rs.Text = template.MustParse("{input.text}")
	}
	if rs.Fallback != "" && s.Model != "" {
		at, what := pos, "the routes file's fallback:"
		if f, ok := src.fields["fallback_route"]; ok {
			at, what = posOf(f.value), "fallback_route"
		}
		d.diags.add(at, label, "%s is for route steps without a model: with model: the semantic router always chooses (drop one of them)", what)
	}
	if _, err := route.New(route.Config{Routes: rs.Routes, Rules: rs.Rules, Fallback: rs.Fallback}); err != nil {
		d.routeProblems(rs, err, pos, label)
	}
	names := make([]any, len(rs.Routes))
	for i, r := range rs.Routes {
		names[i] = r.Name
	}
	if s.OutputSchema == nil {
		sch, err := CompileSchema(s.ID+" route", map[string]any{
			"type":     "object",
			"required": []any{"route", "source", "reason"},
			"properties": map[string]any{
				"route":  map[string]any{"enum": names},
				"source": map[string]any{"enum": []any{"rule", "semantic", "fallback"}},
				"reason": map[string]any{"type": "string"},
				"rule":   map[string]any{"type": "object"},
			},
		})
		if err == nil {
			s.OutputSchema = sch
		}
	}
}

// routeProblems reports err, route.New's error for rs, as diagnostics:
// each problem of a *route.Error at the inline route or rule it names
// (else at pos), any other error once at pos.
func (d *decoder) routeProblems(rs *RouteSpec, err error, pos Pos, label string) {
	var re *route.Error
	if !errors.As(err, &re) {
		d.diags.add(pos, label, "routes: %v", err)
		return
	}
	for _, p := range re.Problems {
		at := pos
		var k int
		if n, _ := fmt.Sscanf(p.Path, "rules[%d]", &k); n == 1 && k < len(rs.rulePos) {
			at = rs.rulePos[k]
		} else if n, _ := fmt.Sscanf(p.Path, "routes[%d]", &k); n == 1 && k < len(rs.routePos) {
			at = rs.routePos[k]
		}
		d.diags.add(at, label, "%s", p.Message)
	}
}

func (d *decoder) checkPlan(s *Step, src *stepSrc, label string) {
	ps := d.planSpec(s)
	if ps.Goal == nil {
		d.diags.add(s.Pos, label, "a plan step needs a goal: (what the plan must achieve; {path} placeholders allowed)")
	}
	if len(ps.Tools) == 0 {
		pos := s.Pos
		if f, ok := src.fields["tools"]; ok {
			pos = posOf(f.value)
		}
		d.diags.add(pos, label, "a plan step needs tools: (the operations its plans may use)")
	}
	if ps.MaxExecuted == 0 {
		ps.MaxExecuted = ps.MaxSteps * (ps.MaxReplans + 1)
	}
}
