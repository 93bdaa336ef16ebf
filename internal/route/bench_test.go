package route_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/reinhq/rein/internal/route"
)

// rules100 is 100 rules, a third each prefix, regexp and expression, the
// regexps case-insensitive with word boundaries and the expressions reading
// the text, as a real routes file would have them.
func rules100(b *testing.B) *route.Router {
	rules := make([]route.Rule, 100)
	for i := range rules {
		switch i % 3 {
		case 0:
			rules[i] = route.Rule{Prefix: fmt.Sprintf("cmd%02d:", i), Route: "weather"}
		case 1:
			rules[i] = route.Rule{Regexp: fmt.Sprintf(`(?i)\b(?:topic|keyword)%02d\b`, i), Route: "account"}
		case 2:
			rules[i] = route.Rule{Expr: fmt.Sprintf("text contains 'token%02d'", i), Route: "general"}
		}
	}
	r, err := route.New(route.Config{Routes: testRoutes, Rules: rules})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkRuleMatch100 routes a request that only rule 97 of 100 (a
// regexp) matches, so 97 rules fail first; the target is ≤ 2 µs.
func BenchmarkRuleMatch100(b *testing.B) {
	r := rules100(b)
	req := route.Request{Text: "Hello, could you look at KEYWORD97 for me before the meeting tomorrow?"}
	b.ReportAllocs()
	for b.Loop() {
		res, ok, err := r.Match(context.Background(), req)
		if !ok || err != nil || res.Rule.Index != 97 {
			b.Fatalf("got %+v, %v, %v", res, ok, err)
		}
	}
}

// BenchmarkRuleMatch100Expr is the same with the match at rule 98, an
// expression.
func BenchmarkRuleMatch100Expr(b *testing.B) {
	r := rules100(b)
	req := route.Request{Text: "Hello, could you look at token98 for me before the meeting tomorrow?"}
	b.ReportAllocs()
	for b.Loop() {
		res, ok, err := r.Match(context.Background(), req)
		if !ok || err != nil || res.Rule.Index != 98 {
			b.Fatalf("got %+v, %v, %v", res, ok, err)
		}
	}
}

// BenchmarkRuleMatch100Miss tries all 100 rules and matches none.
func BenchmarkRuleMatch100Miss(b *testing.B) {
	r := rules100(b)
	req := route.Request{Text: "Hello, could you look at this for me before the meeting tomorrow?"}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := r.Match(context.Background(), req); ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
