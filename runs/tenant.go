package runs

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/store"
)

// TenantHeader is the HTTP header by which a surface that authenticated a
// tenant's token (rein serve) scopes the calls it passes to the MCP
// server at /mcp to that tenant; the surface sets it itself, over
// whatever the client sent.
const TenantHeader = "Rein-Tenant"

type tenantKey struct{}

// WithTenant scopes what is read and started with ctx to tenant's runs:
// Resolve (and so every Reader view of one run) finds only that tenant's
// runs — another tenant's is not found, as a run that does not exist —,
// Reader.List lists only them, and a surface that starts a run with ctx
// records it with tenant (TenantOf).
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantOf returns the tenant ctx is scoped to (WithTenant), and whether
// it is scoped at all.
func TenantOf(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok
}

// scoped applies ctx's tenant to p: a copy with Tenant set when ctx is
// scoped, p itself otherwise.
func scoped(ctx context.Context, p *store.ListRunsParams) *store.ListRunsParams {
	t, ok := TenantOf(ctx)
	if !ok {
		return p
	}
	q := store.ListRunsParams{}
	if p != nil {
		q = *p
	}
	q.Tenant = t
	if t == "" {
		// ListRuns cannot select the runs without a tenant alone: a
		// scope of none lists nothing rather than everything.
		q.Tenant = "\x00"
	}
	return &q
}

// visible refuses a run of another tenant than ctx's as not found.
func visible(ctx context.Context, run *store.Run, ref string) error {
	if t, ok := TenantOf(ctx); ok && run.Tenant != t {
		return fault.New(fault.NotFound, fmt.Errorf("run %s: %w", ref, store.ErrNotFound))
	}
	return nil
}
