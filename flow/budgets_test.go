package flow_test

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
)

func TestConfigBudgets(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`models:
  big: {provider: anthropic, model: claude-sonnet-4-5, price: {input_per_mtok: 3, output_per_mtok: 15, currency: USD}}
  small: {provider: openai, model: gpt-4o-mini, price: {input_per_mtok: 0.15, output_per_mtok: 0.6}}
budgets:
  default: {tokens_per_day: 2000000, cost_per_day: 5.00}
  tenants:
    acme: {tokens_per_day: 10000000}
    globex: {cost_per_day: 0.5}
`), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	big, small := cfg.Models["big"].Price, cfg.Models["small"].Price
	if big == nil || big.InputPerMTok != 3 || big.OutputPerMTok != 15 || big.Currency != "USD" || small == nil || small.Currency != "USD" {
		t.Fatalf("prices: big %+v, small %+v", big, small)
	}
	// 1000 in at 3/Mtok and 100 out at 15/Mtok: 3000 + 1500 micro-units.
	if c := big.Cost(1000, 100); c != 4500 {
		t.Errorf("big.Cost(1000, 100) = %d, want 4500", c)
	}
	if c := small.Cost(1, 0); c != 1 {
		t.Errorf("small.Cost(1, 0) = %d, want 1 (rounded up)", c)
	}
	b := cfg.Budgets
	if b == nil || b.Default == nil || b.Default.TokensPerDay != 2000000 || b.Default.CostPerDay != 5 {
		t.Fatalf("budgets = %+v", b)
	}
	if l := b.For("acme"); l == nil || l.TokensPerDay != 10000000 || l.CostPerDay != 0 {
		t.Errorf("For(acme) = %+v", l)
	}
	if l := b.For("globex"); l == nil || l.CostPerDay != 0.5 || l.TokensPerDay != 0 {
		t.Errorf("For(globex) = %+v", l)
	}
	if l := b.For("initech"); l != b.Default {
		t.Errorf("For(initech) = %+v, want the default", l)
	}
	if l := b.For(""); l != b.Default {
		t.Errorf(`For("") = %+v, want the default`, l)
	}
	if l := (*flow.BudgetsDecl)(nil).For("acme"); l != nil {
		t.Errorf("no budgets: For = %+v", l)
	}
}

func TestConfigBudgetsRejectsBadEntries(t *testing.T) {
	t.Parallel()
	_, err := flow.ParseConfig([]byte(`models:
  a: {provider: openai, model: x, price: {input_per_mtok: -1, output_per_mtok: 15, currency: usd}}
  b: {provider: openai, model: y, price: {input_per_mtok: 1, per_call: 2, currency: EUR}}
  c: {provider: openai, model: z, price: 3}
budgets:
  default: {tokens_per_day: 1.5, cost_per_day: "five"}
  tenants:
    "a b": {tokens_per_day: 1}
    acme: {tokens: 1}
  per_week: {}
`), "rein.yaml")
	if err == nil {
		t.Fatal("bad prices and budgets accepted")
	}
	for _, want := range []string{
		"rein.yaml:2:59: model a: input_per_mtok must be between 0 and 1e+06, not -1",
		`rein.yaml:2:94: model a: currency must be an ISO 4217 code like USD or EUR, not "usd"`,
		`rein.yaml:3:62: unknown field "per_call"`,
		"rein.yaml:4:42: model c: price must be a mapping",
		"rein.yaml:6:29: budgets: default: tokens_per_day must be a whole number, not 1.5",
		"rein.yaml:6:48: cost_per_day must be a number",
		`rein.yaml:8:5: budgets: tenant "a b" must be 1 to 64 letters`,
		`rein.yaml:9:12: unknown field "tokens"`,
		`rein.yaml:10:3: unknown field "per_week"`,
		"price currency EUR differs from model a's usd",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
