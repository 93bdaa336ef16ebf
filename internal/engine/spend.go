package engine

import (
	"context"
	"strconv"
	"strings"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/store"
)

// Spend is what prices and limits the model calls of durable runs by
// their tenant (rein.yaml models: price: and budgets:), reserved in the
// store's ledger (store.Store.Reserve): before each call an upper bound
// (the prompt's estimate plus the model's max_tokens, priced) is reserved
// under the tenant's daily limits, and after it what the call used is
// settled. A call the limits cannot take fails with a fault.Budget error
// naming the budget, before anything is sent.
type Spend struct {
	// Models are rein.yaml models: by name: their price: and max_tokens.
	// A model without price: costs nothing (its tokens still count).
	Models map[string]*flow.ModelDecl
	// Budgets are the tenants' limits; a run whose tenant has none (and
	// no default:) reserves nothing.
	Budgets *flow.BudgetsDecl
}

// DefaultMaxOutput is the output tokens a call is reserved for when its
// model declares no max_tokens (the Anthropic adapter's default cap).
const DefaultMaxOutput = 4096

// estimateTokens is an upper estimate of a request's prompt in tokens:
// one per three bytes of every message, tool definition and schema (the
// tokenizers of today's models average about four), and a few per
// message for the roles and separators.
func estimateTokens(req *model.Request) int64 {
	n := len(req.Schema)
	for _, m := range req.Messages {
		n += len(m.Content) + 12
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Args) + 12
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema) + 12
	}
	return int64(n+2) / 3
}

// spendKey names a model call in the ledger: the run, the step, the
// attempt, the item or round, the decision, the turn, and whether it is
// the corrective request. A retry of the same call (a resume running it
// again) has the same key, so it is never counted twice.
func spendKey(runID string, c *callScope, req *model.Request) string {
	var b strings.Builder
	b.Grow(len(runID) + len(c.step.ID) + 32)
	b.WriteString(runID)
	b.WriteByte('/')
	b.WriteString(c.step.ID)
	b.WriteString("/a")
	b.WriteString(strconv.Itoa(c.attempt))
	if c.unit != "" {
		b.WriteByte('/')
		b.WriteString(c.unit)
	}
	if req.Decision != "" {
		b.WriteByte('/')
		b.WriteString(req.Decision)
	}
	if req.Turn > 0 {
		b.WriteString("/t")
		b.WriteString(strconv.Itoa(req.Turn))
	}
	if req.Corrective {
		b.WriteString("/c")
	}
	return b.String()
}

// reserve reserves the call's upper bound in the ledger and returns what
// settles it once the call returned (with its response, nil when none).
// A run that is not durable (nor an attempt outside the runner on an
// engine with a store: runAt), or whose tenant has no limits, reserves
// nothing.
func (r *run) reserve(ctx context.Context, c *callScope, name string, req *model.Request) (settle func(*model.Response), err error) {
	sp := r.e.cfg.Spend
	if sp == nil || !r.d.on && !r.outside.stored() {
		return noSettle, nil
	}
	lim := sp.Budgets.For(r.tenant)
	if lim == nil {
		return noSettle, nil
	}
	var price *flow.PriceDecl
	out := int64(DefaultMaxOutput)
	if m := sp.Models[name]; m != nil {
		price = m.Price
		if m.MaxTokens > 0 {
			out = int64(m.MaxTokens)
		}
	}
	in := estimateTokens(req)
	p := &store.ReserveParams{Tenant: r.tenant, Day: store.DayOf(r.e.cfg.Clock.Now()), Key: spendKey(r.id, c, req), RunID: r.id,
		Tokens: in + out, Cost: price.Cost(in, out), LimitTokens: lim.TokensPerDay,
		LimitCost: int64(lim.CostPerDay * store.MicrosPerUnit), Now: r.e.cfg.Clock.Now()}
	if _, err := r.e.cfg.Store.Reserve(ctx, p); err != nil {
		return nil, err
	}
	return func(resp *model.Response) {
		var used model.Usage
		if resp != nil {
			used = resp.Usage
		}
		in, out := int64(used.In), int64(used.Out)
		// A settle that fails leaves the reservation open: it counts its
		// upper bound until the run is resumed (ReleaseRun), never less
		// than the call used.
		_ = r.e.cfg.Store.Settle(r.storeCtx, &store.SettleParams{Tenant: p.Tenant, Key: p.Key,
			Tokens: in + out, Cost: price.Cost(in, out), Now: r.e.cfg.Clock.Now()})
	}, nil
}

func noSettle(*model.Response) {}
