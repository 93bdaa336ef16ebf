package route

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow/expression"
)

// maxRegexpLen bounds a rule's regular expression, in bytes.
const maxRegexpLen = 4096

// compiledRule is a validated rule ready to match.
type compiledRule struct {
	index int
	kind  string // "prefix", "regexp" or "expr"
	rule  Rule

	re *regexp.Regexp
	// lit, when not empty, is a literal every match of re contains; a text
	// without it cannot match, so re is not run. With fold set the
	// comparison is case-insensitive (lit is then in folded form).
	lit  string
	fold bool

	prog *expression.Program
}

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
// error naming the rule whose expression failed at run time.
func (r *Router) Match(req Request) (res Result, ok bool, err error) {
	m := matcher{text: req.Text, meta: req.Metadata}
	for i := range r.rules {
		c := &r.rules[i]
		hit, err := m.match(c)
		if err != nil {
			return Result{}, false, fault.BusinessErr(fmt.Errorf("route: rules[%d] (%s): %w", c.index, c.rule, err))
		}
		if hit {
			return Result{
				Route:  c.rule.Route,
				Source: SourceRule,
				Reason: fmt.Sprintf("rule %d matched: %s %q", c.index, c.kind, c.rule.Pattern()),
				Rule:   &RuleMatch{Index: c.index, Kind: c.kind, Pattern: c.rule.Pattern()},
			}, true, nil
		}
	}
	return Result{}, false, nil
}

// matcher holds what is derived from one request, each computed at most
// once and only when a rule needs it.
type matcher struct {
	text    string
	meta    map[string]any
	trimmed *string
	folded  *string
	env     map[string]any
}

func (m *matcher) match(c *compiledRule) (bool, error) {
	switch c.kind {
	case "prefix":
		if m.trimmed == nil {
			t := strings.TrimLeftFunc(m.text, unicode.IsSpace)
			m.trimmed = &t
		}
		return strings.HasPrefix(*m.trimmed, c.rule.Prefix), nil
	case "regexp":
		if c.lit != "" {
			hay := m.text
			if c.fold {
				if m.folded == nil {
					f := foldString(m.text)
					m.folded = &f
				}
				hay = *m.folded
			}
			if !strings.Contains(hay, c.lit) {
				return false, nil
			}
		}
		return c.re.MatchString(m.text), nil
	case "expr":
		if m.env == nil {
			meta := m.meta
			if meta == nil {
				meta = map[string]any{}
			}
			m.env = map[string]any{"text": m.text, "metadata": meta}
		}
		return c.prog.Eval(m.env)
	}
	return false, nil
}

// requiredLiteral returns the longest literal string that every match of
// the regular expression src contains, and whether it is compared
// case-insensitively (then it is returned in folded form, see foldString).
// It returns "" when it cannot tell. It must be sound: a text without the
// literal never matches.
func requiredLiteral(src string) (string, bool) {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return "", false
	}
	lit, fold := literalOf(re.Simplify())
	if strings.ContainsRune(lit, utf8.RuneError) {
		// U+FFFD in a pattern also matches invalid UTF-8 in the text.
		return "", false
	}
	if fold {
		lit = foldString(lit)
	}
	return lit, fold
}

func literalOf(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return literalOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return literalOf(re.Sub[0])
		}
	case syntax.OpConcat:
		var best string
		var bestFold bool
		for _, sub := range re.Sub {
			if lit, fold := literalOf(sub); utf8.RuneCountInString(lit) > utf8.RuneCountInString(best) {
				best, bestFold = lit, fold
			}
		}
		return best, bestFold
	}
	return "", false
}

// foldString maps every rune of s to the smallest rune of its simple case
// folding orbit (the equivalence regexp's (?i) uses), so that two strings
// are equal under (?i) exactly when their folded forms are equal.
func foldString(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		b := []byte(s)
		for i, c := range b {
			if 'a' <= c && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
		return string(b)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}
