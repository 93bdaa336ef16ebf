package flow

import (
	"math"
	"regexp"
	"slices"

	"github.com/reinhq/rein/internal/yamlnode"
)

// PriceDecl is a model's price (rein.yaml models: NAME: price:), per
// million tokens in Currency, e.g.
//
//	price: {input_per_mtok: 3, output_per_mtok: 15, currency: USD}
type PriceDecl struct {
	InputPerMTok, OutputPerMTok float64
	// Currency is the unit of the prices and of cost_per_day (default
	// USD); every priced model of a rein.yaml uses the same.
	Currency string
	Pos      Pos
}

// Cost returns the cost, in micro-units of the currency, of in input and
// out output tokens, rounded up (a budget never under-counts).
func (p *PriceDecl) Cost(in, out int64) int64 {
	if p == nil {
		return 0
	}
	return int64(math.Ceil(float64(in)*p.InputPerMTok + float64(out)*p.OutputPerMTok))
}

// BudgetsDecl is rein.yaml budgets:, the daily limits of tenants' model
// calls, e.g.
//
//	budgets:
//	  default: {tokens_per_day: 2000000, cost_per_day: 5.00}
//	  tenants:
//	    acme: {tokens_per_day: 10000000, cost_per_day: 50}
//
// A run of a tenant listed under tenants: has that tenant's limits; any
// other run (one started without a tenant too) has default:'s, and none
// without default:.
type BudgetsDecl struct {
	Default *LimitDecl
	Tenants map[string]*LimitDecl
	Pos     Pos
}

// LimitDecl is one tenant's daily limits; 0 is no limit.
type LimitDecl struct {
	TokensPerDay int64
	// CostPerDay is in the price table's currency.
	CostPerDay float64
	Pos        Pos
}

// For returns the limits of tenant's runs (nil: none).
func (b *BudgetsDecl) For(tenant string) *LimitDecl {
	if b == nil {
		return nil
	}
	if l, ok := b.Tenants[tenant]; ok && tenant != "" {
		return l
	}
	return b.Default
}

// MaxTokensPerDay bounds tokens_per_day (a trillion tokens), so sums of
// a day's reservations stay far inside an int64.
const MaxTokensPerDay = 1_000_000_000_000

// maxPrice bounds a price per million tokens and cost_per_day, for the
// same reason.
const maxPrice = 1_000_000

var (
	tenantPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`) // a token's tenant (rein serve token create)
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
)

func (d *decoder) decodePrice(f field, where string) *PriceDecl {
	fields, ok := fieldsOf(f.value)
	if !ok {
		d.diags.add(posOf(f.value), "", "%s: price must be a mapping like {input_per_mtok: 3, output_per_mtok: 15, currency: USD}, not %s", where, yamlnode.Kind(f.value))
		return nil
	}
	p := &PriceDecl{Currency: "USD", Pos: posOf(f.value)}
	for _, g := range fields {
		switch g.key {
		case "input_per_mtok":
			p.InputPerMTok = d.amount(g, where, maxPrice)
		case "output_per_mtok":
			p.OutputPerMTok = d.amount(g, where, maxPrice)
		case "currency":
			if c, ok := d.str(g, ""); ok {
				if !currencyPattern.MatchString(c) {
					d.diags.add(posOf(g.value), "", "%s: currency must be an ISO 4217 code like USD or EUR, not %q", where, c)
				}
				p.Currency = c
			}
		default:
			d.unknownField(g, "", where+" price", []string{"input_per_mtok", "output_per_mtok", "currency"})
		}
	}
	return p
}

// amount reads a non-negative number of at most limit.
func (d *decoder) amount(f field, where string, limit float64) float64 {
	x, ok := d.number(f, "")
	if !ok {
		return 0
	}
	if x < 0 || x > limit || math.IsNaN(x) {
		d.diags.add(posOf(f.value), "", "%s: %s must be between 0 and %g, not %g", where, f.key, limit, x)
		return 0
	}
	return x
}

func (d *decoder) decodeTenantBudgets(f field) *BudgetsDecl {
	fields, ok := fieldsOf(f.value)
	if !ok {
		d.diags.add(posOf(f.value), "", "budgets must be a mapping like {default: {tokens_per_day: 1000000, cost_per_day: 5}, tenants: {acme: {…}}}, not %s", yamlnode.Kind(f.value))
		return nil
	}
	b := &BudgetsDecl{Tenants: map[string]*LimitDecl{}, Pos: posOf(f.value)}
	for _, g := range fields {
		switch g.key {
		case "default":
			b.Default = d.decodeLimit(g, "budgets: default")
		case "tenants":
			entries, ok := fieldsOf(g.value)
			if !ok {
				d.diags.add(posOf(g.value), "", "budgets: tenants must map tenant names to {tokens_per_day, cost_per_day}, not %s", yamlnode.Kind(g.value))
				continue
			}
			for _, e := range entries {
				if !tenantPattern.MatchString(e.key) {
					d.diags.add(e.keyPos, "", "budgets: tenant %q must be 1 to 64 letters, digits, ., _, @ and -, starting with a letter or digit", e.key)
					continue
				}
				b.Tenants[e.key] = d.decodeLimit(e, "budgets: tenant "+e.key)
			}
		default:
			d.unknownField(g, "", "budgets", []string{"default", "tenants"})
		}
	}
	return b
}

func (d *decoder) decodeLimit(f field, where string) *LimitDecl {
	fields, ok := fieldsOf(f.value)
	if !ok {
		d.diags.add(posOf(f.value), "", "%s must be a mapping like {tokens_per_day: 1000000, cost_per_day: 5}, not %s", where, yamlnode.Kind(f.value))
		return nil
	}
	l := &LimitDecl{Pos: posOf(f.value)}
	for _, g := range fields {
		switch g.key {
		case "tokens_per_day":
			x := d.amount(g, where, MaxTokensPerDay)
			if x != math.Trunc(x) {
				d.diags.add(posOf(g.value), "", "%s: tokens_per_day must be a whole number, not %g", where, x)
			}
			l.TokensPerDay = int64(x)
		case "cost_per_day":
			l.CostPerDay = d.amount(g, where, maxPrice)
		default:
			d.unknownField(g, "", where, []string{"tokens_per_day", "cost_per_day"})
		}
	}
	return l
}

// checkCurrencies reports priced models of cfg whose currency is not the
// first one's: a day's cost sums them.
func (d *decoder) checkCurrencies(cfg *Config) {
	names := make([]string, 0, len(cfg.Models))
	for name := range cfg.Models {
		names = append(names, name)
	}
	slices.Sort(names)
	var first *ModelDecl
	for _, name := range names {
		m := cfg.Models[name]
		if m.Price == nil {
			continue
		}
		if first == nil {
			first = m
			continue
		}
		if m.Price.Currency != first.Price.Currency {
			d.diags.add(m.Price.Pos, "", "model %s: price currency %s differs from model %s's %s: give every price in one currency, since a day's cost sums them", name, m.Price.Currency, first.Name, first.Price.Currency)
		}
	}
}
