package route

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// checkPrefilter compares every rule's verdict on text, through the
// literal prefilter, with running its regexp or expression directly.
func checkPrefilter(t *testing.T, rules []Rule, texts []string) {
	t.Helper()
	r, err := New(Config{Routes: []Route{{Name: "r", Description: "d"}}, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range texts {
		m := matcher{ctx: context.Background(), lits: r.lits, text: text}
		for i := range r.rules {
			c := &r.rules[i]
			got, gerr := m.match(c)
			var want bool
			var werr error
			switch c.op {
			case opPrefix:
				want = strings.HasPrefix(strings.TrimLeftFunc(text, unicode.IsSpace), c.rule.Prefix)
			case opRegexp:
				want = c.re.MatchString(text)
			case opExpr:
				want, werr = c.prog.Eval(map[string]any{"text": text, "metadata": map[string]any{}})
			}
			if got != want || (gerr == nil) != (werr == nil) {
				t.Fatalf("rule %s (literal %q fold %v) on %q: got %v, %v; want %v, %v", c.rule, c.lit, c.fold, text, got, gerr, want, werr)
			}
		}
	}
}

func TestPrefilterSound(t *testing.T) {
	t.Parallel()
	rules := []Rule{
		{Regexp: `(?i)\bforecast\b`},
		{Regexp: `(?i)stra(ß|ss)e`},
		{Regexp: `(?i)kelvin`},
		{Regexp: `(?i)ſtop`},
		{Regexp: `he(llo)+ world`},
		{Regexp: `a{2,}b`},
		{Regexp: `x*yz?`},
		{Regexp: `(?i)(?:topic|keyword)97`},
		{Regexp: `\x{FFFD}`},
		{Regexp: `^weather`},
		{Expr: "text contains 'she'"},
		{Expr: "text contains 'he'"},
		{Expr: "text contains 'hers'"},
		{Expr: "text startsWith 'inv' && len(text) > 3"},
		{Expr: "text endsWith 'ice'"},
		{Expr: "text matches '(?i)refund(s)?'"},
		{Expr: "text contains 'x' || text contains 'y'"},
		{Expr: "not (text contains 'z')"},
		{Expr: "text contains 'é' && metadata.a.b == 1"},
		{Expr: "len(text) > 5 && text contains 'q'"},
		{Prefix: "weather:"},
	}
	for i := range rules {
		rules[i].Route = "r"
	}
	texts := []string{
		"", "FORECAST", "the Forecast is", "forecasts", "STRASSE", "Straße", "KELVIN", "\u212aelvin", "STOP", "stop", "ſtop",
		"hello world", "helllo world", "hellohello world", "aab", "ab", "y", "xxy", "KEYWORD97", "keyword97x", "\xff",
		"\uFFFD", "weather: x", "  weather: y", "ushers", "she", "invoice", "inv", "REFUNDS", "q", "hello there q", "é",
		"zzz", "résumé é", strings.Repeat("she", 50),
	}
	checkPrefilter(t, rules, texts)
}

func FuzzPrefilter(f *testing.F) {
	f.Add(`(?i)\bforecast\b`, "she,he,hers", "ushers FORECAST")
	f.Add(`(?i)stra(ß|ss)e`, "ß,é", "STRAẞE")
	f.Add(`a+b{2}`, "ab,bb", "aabb")
	f.Add(`(?i)k`, "K,k", "\u212a")
	f.Fuzz(func(t *testing.T, pattern, lits, text string) {
		if len(pattern) > 200 || len(lits) > 200 || len(text) > 500 {
			return
		}
		var rules []Rule
		if _, err := regexp.Compile(pattern); err == nil {
			rules = append(rules, Rule{Regexp: pattern, Route: "r"}, Rule{Regexp: "(?i)" + pattern, Route: "r"})
		}
		for _, lit := range strings.Split(lits, ",") {
			if lit == "" || strings.ContainsAny(lit, `'\{`) || len(rules) > 40 {
				continue
			}
			rules = append(rules,
				Rule{Expr: "text contains '" + lit + "'", Route: "r"},
				Rule{Regexp: "(?i)" + regexp.QuoteMeta(lit), Route: "r"},
				Rule{Regexp: regexp.QuoteMeta(lit) + "+", Route: "r"})
		}
		if len(rules) == 0 {
			return
		}
		if _, err := New(Config{Routes: []Route{{Name: "r", Description: "d"}}, Rules: rules}); err != nil {
			return // e.g. an expression the literal made invalid
		}
		checkPrefilter(t, rules, []string{text, strings.ToUpper(text), strings.ToLower(text)})
	})
}
