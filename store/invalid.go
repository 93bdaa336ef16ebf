package store

import (
	"fmt"
	"time"
)

// The registry of invalidated resources: what a remediation froze stays
// marked across runs, so a later run that reads or writes one of those
// resources is flagged (provenance origin "invalidated", the default rule
// invalidated-resource) until a person clears it (`rein resources clear`).
//
// A row is one resource one frozen call of one run made invalid: the same
// resource frozen by two calls is two rows, and Invalidated returns both.
// Rows belong to the run's tenant and are seen only by it. A clear keeps
// the row, marked cleared, so that recording the same row again (a
// remediation carried on registers its freezes again, idempotently) does
// not make the resource invalid again; a later freeze of it, by another
// call, does. Prune leaves the rows: an invalidation outlives the run that
// made it.

// Invalidation is one row of the registry.
type Invalidation struct {
	// Tenant is the tenant of the run that invalidated the resource ("":
	// runs started without one).
	Tenant string `json:"tenant,omitempty"`
	// Resource is the rendered resource (safety.Touches: a tool's
	// resources: template rendered with its call's args and output).
	Resource string `json:"resource"`
	// RunID and CallKey name the frozen call whose write or send made it
	// invalid.
	RunID   string `json:"run_id"`
	CallKey string `json:"call_key"`
	// Premise is the failed premise the remediation acted on ("saga" for a
	// failed run's compensation); Reason says what was done, for people.
	Premise string `json:"premise"`
	Reason  string `json:"reason,omitempty"`
	// At is when it was invalidated (the caller's time; zero: the
	// store's clock).
	At time.Time `json:"at"`
}

// MaxInvalidatedLookup bounds InvalidatedParams.Resources: a call's
// rendered resources are a handful.
const MaxInvalidatedLookup = 1000

// InvalidatedParams selects rows of the registry.
type InvalidatedParams struct {
	// Tenant keeps that tenant's rows (always: "" is the runs started
	// without a tenant, never every tenant).
	Tenant string
	// Resources, when not empty, keeps the rows of these resources (one
	// indexed lookup; at most MaxInvalidatedLookup). Empty: every row of
	// the tenant, oldest first.
	Resources []string
	// Limit caps the result; ≤ 0 means no cap.
	Limit int
}

// Check refuses a lookup above MaxInvalidatedLookup resources.
func (p *InvalidatedParams) Check() error {
	if len(p.Resources) > MaxInvalidatedLookup {
		return fmt.Errorf("store: a lookup of %d invalidated resources; at most %d at once", len(p.Resources), MaxInvalidatedLookup)
	}
	return nil
}

// ClearInvalidatedParams names the rows a person clears.
type ClearInvalidatedParams struct {
	Tenant string
	// Resource is the resource to clear (required).
	Resource string
	// RunID, when set, clears only the rows that run made.
	RunID string
	// Now is the caller's time, recorded as the clear's; zero: the
	// store's clock.
	Now time.Time
}
