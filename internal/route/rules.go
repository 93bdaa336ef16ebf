package route

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow/expression"
)

// maxRegexpLen bounds a rule's regular expression, in bytes.
const maxRegexpLen = 4096

// compiledRule is a validated rule ready to match.
type compiledRule struct {
	index int
	op    ruleOp
	kind  string // "prefix", "regexp" or "expr"
	rule  Rule

	re *regexp.Regexp
	// lit, when not empty, is a literal every matching text contains (see
	// prefilter.go); a text without it cannot match, so neither re nor
	// prog is run. With fold set the comparison is case-insensitive (lit
	// is then in folded form).
	lit  string
	fold bool

	prog *expression.Program

	reason string // Result.Reason when the rule matches
}

// ruleOp is a rule's condition kind.
type ruleOp uint8

const (
	opPrefix ruleOp = iota
	opRegexp
	opExpr
)

// compileRule validates rule i, reporting into ps.
func (r *Router) compileRule(i int, rl Rule, ps *problems) (compiledRule, bool) {
	path := fmt.Sprintf("rules[%d]", i)
	before := len(ps.list)
	var set []string
	for _, k := range []struct{ name, v string }{{"prefix", rl.Prefix}, {"regexp", rl.Regexp}, {"expr", rl.Expr}} {
		if k.v != "" {
			set = append(set, k.name)
		}
	}
	switch len(set) {
	case 0:
		ps.add("rule", i, "", -1, path, "give exactly one of prefix, regexp or expr")
	case 1:
	default:
		ps.add("rule", i, set[1], -1, path, "give exactly one of prefix, regexp or expr, not %s", strings.Join(set, " and "))
	}
	if rl.Route == "" {
		ps.add("rule", i, "route", -1, path+".route", "missing route: name the route this rule selects (routes: %s)", r.names())
	} else if _, ok := r.byName[rl.Route]; !ok {
		ps.add("rule", i, "route", -1, path+".route", "rule selects %q, which is not a route (routes: %s)", rl.Route, r.names())
	}
	c := compiledRule{index: i, rule: rl}
	if len(set) > 0 {
		c.kind = set[0]
		c.op = map[string]ruleOp{"prefix": opPrefix, "regexp": opRegexp, "expr": opExpr}[c.kind]
		c.reason = fmt.Sprintf("rule %d matched: %s %q", i, c.kind, rl.Pattern())
	}
	if rl.Regexp != "" {
		if len(rl.Regexp) > maxRegexpLen {
			ps.add("rule", i, "regexp", -1, path+".regexp", "regexp is %d bytes long; the limit is %d", len(rl.Regexp), maxRegexpLen)
		} else if re, err := regexp.Compile(rl.Regexp); err != nil {
			ps.add("rule", i, "regexp", -1, path+".regexp", "bad regexp: %s", regexpMessage(err))
		} else {
			c.re = re
			c.lit, c.fold = requiredLiteral(rl.Regexp)
		}
	}
	if rl.Expr != "" {
		prog, err := expression.Compile(rl.Expr)
		var ee *expression.Error
		switch {
		case errors.As(err, &ee):
			ps.add("rule", i, "expr", ee.Offset, path+".expr", "bad expression: %s", ee.Msg)
		case err != nil:
			ps.add("rule", i, "expr", -1, path+".expr", "bad expression: %v", err)
		default:
			c.prog = prog
			c.lit, c.fold = exprLiteral(rl.Expr)
			for _, site := range prog.RefSites() {
				if root := site.Path[0].Key; root != "text" && root != "metadata" {
					ps.add("rule", i, "expr", site.Offset, path+".expr", "unknown name %q: a rule expression reads text and metadata", root)
					break
				}
			}
		}
	}
	return c, len(ps.list) == before
}

// regexpMessage is a regexp compile error without the "error parsing
// regexp: " prefix.
func regexpMessage(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: `%s`", se.Code, se.Expr)
	}
	return err.Error()
}

// Match tries the rules only, in order, and never calls the semantic
// router: ok is false when none matches. The error is a fault.Business
// error naming the rule whose expression failed at run time, or
// context.Cause(ctx) once ctx ends (checked before every rule and inside
// the loops of rule expressions).
func (r *Router) Match(ctx context.Context, req Request) (res Result, ok bool, err error) {
	m := matcher{ctx: ctx, lits: r.lits, text: req.Text, meta: req.Metadata}
	for i := range r.rules {
		c := &r.rules[i]
		if ctx.Err() != nil {
			return Result{}, false, context.Cause(ctx)
		}
		hit, err := m.match(c)
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, false, context.Cause(ctx)
			}
			return Result{}, false, fault.BusinessErr(fmt.Errorf("route: rules[%d] (%s): %w", c.index, c.rule, err))
		}
		if hit {
			return Result{
				Route:  c.rule.Route,
				Source: SourceRule,
				Reason: c.reason,
				Rule:   &RuleMatch{Index: c.index, Kind: c.kind, Pattern: c.rule.Pattern()},
			}, true, nil
		}
	}
	return Result{}, false, nil
}

// matcher holds what is derived from one request, each computed at most
// once and only when a rule needs it.
type matcher struct {
	ctx     context.Context
	lits    *literalSet
	text    string
	meta    map[string]any
	trimmed string
	folded  string
	env     map[string]any
	did     uint8 // didTrim | didFold | didScan
	// small (up to 128 rules) or big marks the rules whose literal the
	// text contains, after didScan.
	small [2]uint64
	big   []uint64
}

const (
	didTrim uint8 = 1 << iota
	didFold
	didScan
)

func (m *matcher) match(c *compiledRule) (bool, error) {
	if c.op == opPrefix {
		if m.did&didTrim == 0 {
			m.trimmed, m.did = strings.TrimLeftFunc(m.text, unicode.IsSpace), m.did|didTrim
		}
		return strings.HasPrefix(m.trimmed, c.rule.Prefix), nil
	}
	if c.lit != "" && m.lits != nil {
		if m.did&didScan == 0 {
			if n := (m.lits.n + 63) / 64; n > len(m.small) {
				m.big = make([]uint64, n)
				m.lits.scan(m.text, m.big)
			} else {
				m.lits.scan(m.text, m.small[:])
			}
			m.did |= didScan
		}
		set := m.small[:]
		if m.big != nil {
			set = m.big
		}
		if set[c.index>>6]&(1<<(c.index&63)) == 0 {
			return false, nil
		}
	} else if c.lit != "" {
		hay := m.text
		if c.fold {
			if m.did&didFold == 0 {
				m.folded, m.did = foldString(m.text), m.did|didFold
			}
			hay = m.folded
		}
		if !strings.Contains(hay, c.lit) {
			return false, nil
		}
	}
	if c.re != nil {
		return c.re.MatchString(m.text), nil
	}
	if m.env == nil {
		meta := m.meta
		if meta == nil {
			meta = map[string]any{}
		}
		m.env = map[string]any{"text": m.text, "metadata": meta}
	}
	return c.prog.EvalContext(m.ctx, m.env)
}
