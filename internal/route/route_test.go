package route_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/route"
)

func TestRuleRoutedNeverReachesSemanticRouter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		req   route.Request
		route string
		rule  int
		kind  string
	}{
		{"prefix", route.Request{Text: "weather: Tokyo"}, "weather", 0, "prefix"},
		{"prefix after space", route.Request{Text: "  weather: Oslo"}, "weather", 0, "prefix"},
		{"regexp", route.Request{Text: "What's the FORECAST for Lima?"}, "weather", 1, "regexp"},
		{"expr", route.Request{Text: "where is my invoice"}, "account", 2, "expr"},
		{"expr on metadata", route.Request{Text: "hello", Metadata: map[string]any{"channel": "billing-desk"}}, "account", 3, "expr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			scripted := route.ScriptedMap(nil)
			viaModel := route.NewModelSemantic(forbidden(t), nil)
			for _, sem := range []route.Semantic{scripted, viaModel} {
				res, err := newRouter(t, sem).Route(context.Background(), tc.req)
				if err != nil {
					t.Fatal(err)
				}
				if res.Route != tc.route || res.Source != route.SourceRule || res.Rule == nil || res.Rule.Index != tc.rule || res.Rule.Kind != tc.kind {
					t.Fatalf("got %+v (rule %+v), want route %s from rule %d (%s)", res, res.Rule, tc.route, tc.rule, tc.kind)
				}
				if !strings.Contains(res.Reason, "rule ") {
					t.Errorf("reason %q does not name the rule", res.Reason)
				}
			}
			if scripted.Calls() != 0 {
				t.Fatalf("semantic router called %d times", scripted.Calls())
			}
		})
	}
}

func TestFirstMatchingRuleWins(t *testing.T) {
	t.Parallel()
	r, err := route.New(route.Config{
		Routes: testRoutes,
		Rules: []route.Rule{
			{Expr: "len(text) > 10", Route: "general"},
			{Prefix: "weather:", Route: "weather"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 50 { // the same answer every time
		res, err := r.Route(context.Background(), route.Request{Text: "weather: Tokyo and Osaka"})
		if err != nil || res.Route != "general" || res.Rule.Index != 0 {
			t.Fatalf("got %+v, %v; want general from rule 0", res, err)
		}
	}
	res, err := r.Route(context.Background(), route.Request{Text: "weather: x"})
	if err != nil || res.Route != "weather" || res.Rule.Index != 1 {
		t.Fatalf("got %+v, %v; want weather from rule 1", res, err)
	}
}

func TestSemanticSeesRoutesInOrder(t *testing.T) {
	t.Parallel()
	var got [][]string
	var mu sync.Mutex
	sem := route.ScriptedFunc(func(_ context.Context, _ route.Request, routes []route.Route) (route.Choice, error) {
		names := make([]string, len(routes))
		for i, rt := range routes {
			names[i] = rt.Name
		}
		mu.Lock()
		got = append(got, names)
		mu.Unlock()
		routes[0].Name = "mutated" // must not leak into the router
		return route.Choice{Route: "general", Reason: "a rewrite"}, nil
	})
	r := newRouter(t, sem)
	for range 3 {
		res, err := r.Route(context.Background(), route.Request{Text: "rewrite this"})
		if err != nil || res.Route != "general" || res.Source != route.SourceSemantic || res.Reason != "a rewrite" || res.Rule != nil {
			t.Fatalf("got %+v, %v", res, err)
		}
	}
	for _, names := range got {
		if strings.Join(names, ",") != "weather,account,general" {
			t.Fatalf("semantic router saw routes %v, want weather,account,general", names)
		}
	}
	if r.Routes()[0].Name != "weather" {
		t.Fatal("the semantic router changed the router's routes")
	}
}

func TestRouterRejectsBadSemanticChoice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		choice route.Choice
		want   string
	}{
		{"outside the set", route.Choice{Route: "billing", Reason: "a charge"}, `/route: "billing" is not one of the routes (weather, account, general)`},
		{"case differs", route.Choice{Route: "Account", Reason: "a charge"}, `"Account" is not one of the routes`},
		{"empty route", route.Choice{Reason: "a charge"}, `"" is not one of the routes`},
		{"no reason", route.Choice{Route: "account"}, "/reason: the reason is empty"},
		{"blank reason", route.Choice{Route: "account", Reason: " \n\t"}, "/reason: the reason is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRouter(t, route.ScriptedMap(map[string]route.Choice{"charged twice": tc.choice}))
			res, err := r.Route(context.Background(), route.Request{Text: "charged twice"})
			if err == nil {
				t.Fatalf("accepted %+v", res)
			}
			if fault.ClassOf(err) != fault.Format || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q (class %s), want format error containing %q", err, fault.ClassOf(err), tc.want)
			}
			if res.Route != "" {
				t.Fatalf("a rejected choice still routed to %q", res.Route)
			}
		})
	}
}

func TestNoMatchAndFallback(t *testing.T) {
	t.Parallel()
	r, err := route.New(route.Config{Routes: testRoutes, Rules: testRules})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Route(context.Background(), route.Request{Text: "rewrite this"})
	if !errors.Is(err, route.ErrNoMatch) || fault.ClassOf(err) != fault.Business {
		t.Fatalf("got %v (class %s), want ErrNoMatch, business", err, fault.ClassOf(err))
	}
	r, err = route.New(route.Config{Routes: testRoutes, Rules: testRules, Fallback: "general"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Route(context.Background(), route.Request{Text: "rewrite this"})
	if err != nil || res.Route != "general" || res.Source != route.SourceFallback || res.Reason == "" {
		t.Fatalf("got %+v, %v; want the fallback route", res, err)
	}
	if res, _ := r.Route(context.Background(), route.Request{Text: "weather: Rome"}); res.Source != route.SourceRule {
		t.Fatalf("a rule match went to %+v", res)
	}
	if res, ok, err := r.Match(context.Background(), route.Request{Text: "rewrite this"}); ok || err != nil {
		t.Fatalf("Match without a matching rule: %+v, %v, %v", res, ok, err)
	}
}

func TestExprRuntimeErrorNamesRule(t *testing.T) {
	t.Parallel()
	r, err := route.New(route.Config{Routes: testRoutes, Rules: []route.Rule{
		{Expr: "metadata.user.tier == 'gold'", Route: "account"},
		{Expr: "metadata.user?.tier == 'gold'", Route: "account"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Route(context.Background(), route.Request{Text: "hi"})
	if err == nil || fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "rules[0]") {
		t.Fatalf("got %v, want a business error naming rules[0]", err)
	}
	res, err := r.Route(context.Background(), route.Request{Text: "hi", Metadata: map[string]any{"user": map[string]any{"tier": "gold"}}})
	if err != nil || res.Route != "account" || res.Rule.Index != 0 {
		t.Fatalf("got %+v, %v", res, err)
	}
}

func TestExprRules(t *testing.T) {
	t.Parallel()
	r, err := route.New(route.Config{Routes: testRoutes, Rules: []route.Rule{
		{Expr: "len(text) > 200", Route: "general"},
		{Expr: "lower(text) contains 'refund'", Route: "account"},
		{Expr: "{metadata.lang} == 'de' && text startsWith 'Wetter'", Route: "weather"},
	}, Fallback: "general"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req  route.Request
		want string
		src  route.Source
	}{
		{route.Request{Text: strings.Repeat("x", 201)}, "general", route.SourceRule},
		{route.Request{Text: "I want a REFUND"}, "account", route.SourceRule},
		{route.Request{Text: "Wetter in Berlin", Metadata: map[string]any{"lang": "de"}}, "weather", route.SourceRule},
		{route.Request{Text: "Wetter in Berlin"}, "general", route.SourceFallback},
	} {
		res, err := r.Route(context.Background(), tc.req)
		if err != nil || res.Route != tc.want || res.Source != tc.src {
			t.Errorf("%q: got %+v, %v; want %s by %s", tc.req.Text, res, err, tc.want, tc.src)
		}
	}
}

func TestNewReportsEveryProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  route.Config
		want []string
	}{
		{"no routes", route.Config{}, []string{"routes: no routes"}},
		{"names", route.Config{Routes: []route.Route{
			{Description: "d"}, {Name: "a", Description: "d"}, {Name: "a", Description: "d"},
			{Name: " b", Description: "d"}, {Name: "c\nd", Description: "d"}, {Name: "e"},
		}}, []string{
			"routes[0].name: missing route name",
			`routes[2].name: duplicate route name "a" (first at routes[1])`,
			`routes[3].name: route name " b" has leading or trailing white space`,
			`routes[4].name: route name "c\nd" holds the control character U+000A`,
			`routes[5].description: route "e" needs a description`,
		}},
		{"rules", route.Config{Routes: testRoutes, Rules: []route.Rule{
			{Route: "weather"},
			{Prefix: "a", Regexp: "b", Route: "weather"},
			{Prefix: "a"},
			{Prefix: "a", Route: "billing"},
			{Regexp: "(", Route: "weather"},
			{Expr: "text contains", Route: "weather"},
			{Expr: "os.system('x')", Route: "weather"},
			{Expr: "txt == 'a'", Route: "weather"},
			{Expr: "now() > 1", Route: "weather"},
		}}, []string{
			"rules[0]: give exactly one of prefix, regexp or expr",
			"rules[1]: give exactly one of prefix, regexp or expr, not prefix and regexp",
			"rules[2].route: missing route",
			`rules[3].route: rule selects "billing", which is not a route (routes: weather, account, general)`,
			"rules[4].regexp: bad regexp: missing closing ): `(`",
			"rules[5].expr: bad expression:",
			"rules[6].expr: bad expression: method calls are not allowed",
			`rules[7].expr: unknown name "txt": a rule expression reads text and metadata`,
			"rules[8].expr: bad expression: function now is not allowed",
		}},
		{"fallback", route.Config{Routes: testRoutes, Fallback: "nowhere", Semantic: route.ScriptedMap(nil)}, []string{
			`fallback: fallback route "nowhere" is not a route`,
			"fallback: a fallback route cannot be combined with a semantic router",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := route.New(tc.cfg)
			var e *route.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want *route.Error", err)
			}
			if len(e.Problems) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(e.Problems), len(tc.want), err)
			}
			for i, w := range tc.want {
				if got := e.Problems[i].String(); !strings.HasPrefix(got, w) {
					t.Errorf("problem %d:\n got %s\nwant %s…", i, got, w)
				}
			}
		})
	}
}

func TestConcurrentRouting(t *testing.T) {
	t.Parallel()
	sem := route.ScriptedMap(map[string]route.Choice{"rewrite this": {Route: "general", Reason: "a rewrite"}})
	r := newRouter(t, sem)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				text := "rewrite this"
				want := "general"
				if (i+j)%2 == 0 {
					text, want = "invoice 42", "account"
				}
				res, err := r.Route(context.Background(), route.Request{Text: text})
				if err != nil || res.Route != want {
					t.Errorf("got %+v, %v; want %s", res, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if sem.Calls() != 400 {
		t.Fatalf("semantic router called %d times, want 400", sem.Calls())
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRouter(t, route.ScriptedMap(nil))
	if _, err := r.Route(ctx, route.Request{Text: "rewrite this"}); fault.ClassOf(err) != fault.Cancelled {
		t.Fatalf("got %v (class %s), want cancelled", err, fault.ClassOf(err))
	}
	// Rules stop too: a run whose time is up routes nothing.
	if res, err := r.Route(ctx, route.Request{Text: "weather: Oslo"}); fault.ClassOf(err) != fault.Cancelled {
		t.Fatalf("got %+v, %v; want cancelled", res, err)
	}
}

// TestRulesStopOnTime checks that thousands of rules over a large text,
// which take far longer than the deadline, stop soon after it.
func TestRulesStopOnTime(t *testing.T) {
	t.Parallel()
	routes := []route.Route{{Name: "a", Description: "a"}}
	var rules []route.Rule
	for i := range 5000 {
		rules = append(rules, route.Rule{Regexp: fmt.Sprintf(`(x|y)+z%d$`, i), Route: "a"})
		rules = append(rules, route.Rule{Expr: fmt.Sprintf(`any(split(text, ""), {# == "q%d"})`, i), Route: "a"})
	}
	r, err := route.New(route.Config{Routes: routes, Rules: rules, Fallback: "a"})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("xy", 1<<19) // 1 MiB
	cause := errors.New("time is up")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 200*time.Millisecond, cause)
	defer cancel()
	start := time.Now()
	_, err = r.Route(ctx, route.Request{Text: text})
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the deadline's cause", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stopped after %s", d)
	}
}
