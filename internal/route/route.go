package route

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/model"
)

// Route is one destination a request may be routed to.
type Route struct {
	// Name identifies the route; it is what Result.Route holds. Names are
	// unique, non-empty, without surrounding white space or control
	// characters.
	Name string `json:"name"`
	// Description says which requests belong here. It is required: the
	// semantic router chooses by it.
	Description string `json:"description"`
}

// Rule selects Route for a request when its one condition holds. Exactly
// one of Prefix, Regexp and Expr is set.
type Rule struct {
	// Prefix matches when the request text, with leading white space
	// removed, starts with it (case-sensitive).
	Prefix string `json:"prefix,omitempty"`
	// Regexp matches when this RE2 regular expression (package regexp
	// syntax; linear time, no backtracking) matches anywhere in the text.
	// Use (?i) for case-insensitive and ^ to anchor.
	Regexp string `json:"regexp,omitempty"`
	// Expr matches when this expression (package flow/expression: a
	// whitelisted, side-effect-free subset of expr-lang) is true. It may
	// read text (the request text) and metadata (the request metadata, a
	// map; empty when the request has none), e.g. `text contains 'refund'`,
	// `len(text) > 200`, `metadata.channel == 'email'`.
	Expr string `json:"expr,omitempty"`
	// Route is the name of the route the rule selects.
	Route string `json:"route"`
}

// Kind returns "prefix", "regexp" or "expr", whichever condition is set
// first, or "" for none.
func (r Rule) Kind() string {
	switch {
	case r.Prefix != "":
		return "prefix"
	case r.Regexp != "":
		return "regexp"
	case r.Expr != "":
		return "expr"
	}
	return ""
}

// Pattern returns the rule's condition: its prefix, regexp or expression.
func (r Rule) Pattern() string {
	switch r.Kind() {
	case "prefix":
		return r.Prefix
	case "regexp":
		return r.Regexp
	}
	return r.Expr
}

// String describes the rule as `prefix "weather:" → weather`.
func (r Rule) String() string {
	return fmt.Sprintf("%s %q → %s", r.Kind(), r.Pattern(), r.Route)
}

// Request is what is routed.
type Request struct {
	Text string `json:"text"`
	// Metadata is visible to rule expressions as metadata; it is not sent
	// to the semantic router.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Source says how a route was chosen.
type Source string

// Sources of a Result.
const (
	// SourceRule: a rule matched; no model was called.
	SourceRule Source = "rule"
	// SourceSemantic: no rule matched and the semantic router chose.
	SourceSemantic Source = "semantic"
	// SourceFallback: no rule matched, there is no semantic router, and
	// the configuration names a fallback route.
	SourceFallback Source = "fallback"
)

// Result is a routing decision.
type Result struct {
	Route  string `json:"route"`
	Source Source `json:"source"`
	// Reason says why: the rule that matched, the semantic router's
	// reason, or that the fallback route was taken. Never empty.
	Reason string `json:"reason"`
	// Rule is the rule that matched, for SourceRule; nil otherwise.
	Rule *RuleMatch `json:"rule,omitempty"`
	// Usage is the tokens the semantic router spent, when it reports them.
	Usage model.Usage `json:"usage,omitzero"`
}

// RuleMatch identifies the rule behind a SourceRule result.
type RuleMatch struct {
	// Index is the rule's position in Config.Rules (for a routes file:
	// among all its rules, in file order).
	Index   int    `json:"index"`
	Kind    string `json:"kind"`
	Pattern string `json:"pattern"`
}

// Config configures a Router. Only Routes is required.
type Config struct {
	// Routes is the closed set of routes; order is kept (it is the order
	// the semantic router sees them in).
	Routes []Route
	// Rules are tried in order before anything else; the first that
	// matches decides and no model is called.
	Rules []Rule
	// Semantic chooses a route when no rule matches. Nil means there is
	// no semantic router: such a request gets Fallback, or ErrNoMatch.
	Semantic Semantic
	// Fallback names the route for requests no rule matches when Semantic
	// is nil. It must be one of Routes. Defaults to none (ErrNoMatch). It
	// cannot be combined with Semantic: the semantic router always
	// chooses, and a choice it gets wrong is an error, never a default.
	Fallback string
}

// Router routes requests: rules first, then the semantic router. It is
// immutable and safe for concurrent use.
type Router struct {
	routes   []Route
	byName   map[string]int
	rules    []compiledRule
	lits     *literalSet
	semantic Semantic
	fallback string
}

// New validates cfg and returns its Router. Every problem is reported at
// once in an *Error: missing or duplicate route names, missing
// descriptions, rules with no or several conditions, rules naming an
// unknown route, regular expressions or expressions that do not compile,
// an unknown or misplaced fallback. cfg's slices are copied.
func New(cfg Config) (*Router, error) {
	var ps problems
	r := &Router{
		routes:   slices.Clone(cfg.Routes),
		byName:   make(map[string]int, len(cfg.Routes)),
		semantic: cfg.Semantic,
		fallback: cfg.Fallback,
	}
	if len(cfg.Routes) == 0 {
		ps.add("", 0, "", -1, "routes", "no routes: give at least one route with a name and a description")
	}
	for i, rt := range cfg.Routes {
		path := fmt.Sprintf("routes[%d]", i)
		if msg := checkName(rt.Name); msg != "" {
			ps.add("route", i, "name", -1, path+".name", "%s", msg)
		} else if first, dup := r.byName[rt.Name]; dup {
			ps.add("route", i, "name", -1, path+".name", "duplicate route name %q (first at routes[%d])", rt.Name, first)
		} else {
			r.byName[rt.Name] = i
		}
		if strings.TrimSpace(rt.Description) == "" {
			ps.add("route", i, "description", -1, path+".description", "route %q needs a description: the semantic router chooses by it", rt.Name)
		}
	}
	r.rules = make([]compiledRule, 0, len(cfg.Rules))
	for i, rl := range cfg.Rules {
		if c, ok := r.compileRule(i, rl, &ps); ok {
			r.rules = append(r.rules, c)
		}
	}
	if cfg.Fallback != "" {
		if _, ok := r.byName[cfg.Fallback]; !ok {
			ps.add("fallback", 0, "", -1, "fallback", "fallback route %q is not a route (routes: %s)", cfg.Fallback, r.names())
		}
		if cfg.Semantic != nil {
			ps.add("fallback", 0, "", -1, "fallback", "a fallback route cannot be combined with a semantic router: the semantic router always chooses a route, and a choice outside the set is an error, never a default")
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	r.lits = newLiteralSet(r.rules)
	return r, nil
}

// checkName returns what is wrong with a route name, or "".
func checkName(name string) string {
	switch {
	case name == "":
		return "missing route name"
	case strings.TrimSpace(name) != name:
		return fmt.Sprintf("route name %q has leading or trailing white space", name)
	case yamlnode.NameProblem(name) != "":
		return fmt.Sprintf("route name %q %s", name, yamlnode.NameProblem(name))
	case len(name) > maxNameLen:
		return fmt.Sprintf("route name is %d bytes long; the limit is %d", len(name), maxNameLen)
	}
	return ""
}

const maxNameLen = 128

// names lists the route names, comma-separated, in order.
func (r *Router) names() string {
	names := make([]string, 0, len(r.routes))
	for i, rt := range r.routes {
		if first, ok := r.byName[rt.Name]; ok && first == i {
			names = append(names, rt.Name)
		}
	}
	return strings.Join(names, ", ")
}

// Routes returns the routes, in order. The slice is a copy.
func (r *Router) Routes() []Route { return slices.Clone(r.routes) }

// Has reports whether name is one of the routes.
func (r *Router) Has(name string) bool {
	_, ok := r.byName[name]
	return ok
}

// Route decides where req goes. Rules are tried in order and the first
// that matches decides without calling the semantic router. Otherwise the
// semantic router chooses; its choice is accepted only if it names one of
// the routes and gives a non-empty reason (anything else is a fault.Format
// error, never mapped to another route). Without a semantic router the
// fallback route is taken, or the error wraps ErrNoMatch (fault.Business).
// A rule expression that fails at run time is a fault.Business error
// naming the rule. Errors of the semantic router are returned wrapped,
// with their class.
func (r *Router) Route(ctx context.Context, req Request) (Result, error) {
	res, ok, err := r.Match(ctx, req)
	if err != nil || ok {
		return res, err
	}
	if r.semantic == nil {
		if r.fallback != "" {
			return Result{Route: r.fallback, Source: SourceFallback, Reason: "no rule matched; took the fallback route"}, nil
		}
		return Result{}, fault.BusinessErr(fmt.Errorf("route: %w", ErrNoMatch))
	}
	c, err := r.semantic.Choose(ctx, req, slices.Clone(r.routes))
	if err != nil {
		return Result{}, fmt.Errorf("route: semantic router: %w", err)
	}
	if msg := checkChoice(c, r.byName, r.names); msg != "" {
		return Result{}, fault.Errorf(fault.Format, "route: semantic router: %s", msg)
	}
	return Result{Route: c.Route, Source: SourceSemantic, Reason: strings.TrimSpace(c.Reason), Usage: c.Usage}, nil
}

// checkChoice returns what is wrong with a semantic choice, or "".
func checkChoice(c Choice, byName map[string]int, names func() string) string {
	if _, ok := byName[c.Route]; !ok {
		return fmt.Sprintf("/route: %q is not one of the routes (%s); choose exactly one of them", c.Route, names())
	}
	if strings.TrimSpace(c.Reason) == "" {
		return "/reason: the reason is empty; say in a sentence why the request belongs to route " + c.Route
	}
	return ""
}
