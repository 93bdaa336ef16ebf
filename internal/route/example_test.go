package route_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/internal/route"
	"github.com/reinhq/rein/model"
)

func Example() {
	// A model that answers the semantic router (a real provider in
	// production, model/scripted in tests).
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Text: `{"route": "account", "reason": "A double charge is a billing question."}`}, nil
	})
	r, err := route.New(route.Config{
		Routes: []route.Route{
			{Name: "weather", Description: "Weather questions for a city"},
			{Name: "account", Description: "Billing, charges, refunds, login"},
			{Name: "general", Description: "Anything else (rewrites, summaries)"},
		},
		Rules: []route.Rule{
			{Prefix: "weather:", Route: "weather"},
			{Expr: "text contains 'invoice'", Route: "account"},
		},
		Semantic: route.NewModelSemantic(m, nil),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, text := range []string{"weather: Tokyo", "I think I was charged twice this month"} {
		res, err := r.Route(context.Background(), route.Request{Text: text})
		if err != nil {
			fmt.Println(err)
			return
		}
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
	}
	// Output:
	// {"route":"weather","source":"rule","reason":"rule 0 matched: prefix \"weather:\"","rule":{"index":0,"kind":"prefix","pattern":"weather:"}}
	// {"route":"account","source":"semantic","reason":"A double charge is a billing question."}
}

func ExampleParse() {
	f, err := route.Parse("routes.yaml", []byte(`routes:
  - name: weather
    description: Weather questions for a city
    rules: [{regexp: "(?i)\\bforecast("}]
  - name: general
    description: Anything else
rules:
  - {prefix: "bill:", route: billing}
`))
	fmt.Println(f == nil)
	fmt.Println(err)
	// Output:
	// true
	// routes.yaml:4:22: bad regexp: missing closing ): `(?i)\bforecast(`
	// routes.yaml:8:30: rule selects "billing", which is not a route (routes: weather, general)
}

func ExampleScriptedMap() {
	sem := route.ScriptedMap(map[string]route.Choice{
		"rewrite this politely": {Route: "general", Reason: "a rewrite request"},
	})
	r, _ := route.New(route.Config{
		Routes:   []route.Route{{Name: "weather", Description: "Weather"}, {Name: "general", Description: "Anything else"}},
		Rules:    []route.Rule{{Prefix: "weather:", Route: "weather"}},
		Semantic: sem,
	})
	res, _ := r.Route(context.Background(), route.Request{Text: "weather: Oslo"})
	fmt.Println(res.Route, res.Source, sem.Calls())
	res, _ = r.Route(context.Background(), route.Request{Text: "rewrite this politely"})
	fmt.Println(res.Route, res.Source, res.Reason, sem.Calls())
	// Output:
	// weather rule 0
	// general semantic a rewrite request 1
}
