package route_test

import (
	"context"
	"sync"
	"testing"

	"github.com/reinhq/rein/internal/route"
	"github.com/reinhq/rein/model"
)

// fakeModel answers with replies in order and records every request.
type fakeModel struct {
	t       *testing.T
	mu      sync.Mutex
	replies []string
	reqs    []*model.Request
}

func (f *fakeModel) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	if len(f.reqs) > len(f.replies) {
		f.t.Errorf("model called %d times; only %d replies scripted", len(f.reqs), len(f.replies))
		return &model.Response{Text: "{}"}, nil
	}
	return &model.Response{Text: f.replies[len(f.reqs)-1], Usage: model.Usage{In: 10, Out: 5}}, nil
}

func (f *fakeModel) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// forbidden is a model that fails the test when called.
func forbidden(t *testing.T) model.Model {
	return model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		t.Errorf("the model was called; a rule should have decided")
		return &model.Response{Text: `{"route":"general","reason":"x"}`}, nil
	})
}

var testRoutes = []route.Route{
	{Name: "weather", Description: "Weather questions for a city"},
	{Name: "account", Description: "Billing, charges, refunds, login"},
	{Name: "general", Description: "Anything else (rewrites, summaries)"},
}

var testRules = []route.Rule{
	{Prefix: "weather:", Route: "weather"},
	{Regexp: `(?i)\bforecast\b`, Route: "weather"},
	{Expr: "text contains 'invoice'", Route: "account"},
	{Expr: "metadata.channel == 'billing-desk'", Route: "account"},
}

func newRouter(t *testing.T, sem route.Semantic) *route.Router {
	t.Helper()
	r, err := route.New(route.Config{Routes: testRoutes, Rules: testRules, Semantic: sem})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
