package store

import (
	"fmt"
	"time"

	"github.com/reinhq/rein/fault"
)

// The budget ledger: what each tenant's model calls spend per UTC day, in
// tokens and money, so a limit holds across processes sharing the store
// and across restarts (docs/server.md "Budgets").
//
// A model call reserves an upper bound of its cost before it is made
// (Reserve) and settles what it really used after (Settle). A day's use is
// the sum of its reservations' settled amounts plus the reserved amounts of
// those still open. Reserve refuses, atomically with the other reservers,
// a reservation that would take the day's use past a limit.
//
// A reservation is named by its key, the call's own identity (run, step,
// attempt, item, turn …): reserving a key again (a retry of the same call)
// reuses the row, so a call is never counted twice, and settling adds what
// each try really used. ReleaseRun closes the open reservations of a run
// whose calls died with their process: a resumed run calls it before it
// calls a model again, so a crash leaks no reserved budget.

// Money amounts in the ledger are in micro-units of the price table's
// currency (1 USD = 1,000,000): a price per million tokens times a token
// count is the cost in micro-units, with no rounding of sums.
const MicrosPerUnit = 1_000_000

// ReservationState is where a reservation stands.
type ReservationState string

// Reservation states.
const (
	// Reserved: the call is in flight; its reserved amounts count.
	Reserved ReservationState = "reserved"
	// Settled: the call returned; its settled amounts count.
	Settled ReservationState = "settled"
	// Released: the call's process died (ReleaseRun); its settled
	// amounts, from earlier tries, still count.
	Released ReservationState = "released"
)

// ReserveParams asks to reserve a model call's upper bound.
type ReserveParams struct {
	// Tenant is the budget's owner; "" is the runs started without one.
	Tenant string
	// Day is the UTC day the call is charged to, "2006-01-02" (DayOf).
	Day string
	// Key names the call (unique per tenant): a retry of the same call
	// passes the same key.
	Key string
	// RunID is the run that makes the call (ReleaseRun).
	RunID string
	// Tokens and Cost (micro-units) are the call's upper bound.
	Tokens, Cost int64
	// LimitTokens and LimitCost are the day's limits; 0 is none.
	LimitTokens, LimitCost int64
	// Now is the caller's time, recorded; zero means the store's clock.
	Now time.Time
}

// SettleParams records what a reserved call used.
type SettleParams struct {
	Tenant, Key string
	// Tokens and Cost (micro-units) are what the call really used; they
	// are added to the reservation's settled amounts.
	Tokens, Cost int64
	Now          time.Time
}

// Reservation is one ledger row.
type Reservation struct {
	Tenant string           `json:"tenant"`
	Day    string           `json:"day"`
	Key    string           `json:"key"`
	RunID  string           `json:"run_id"`
	State  ReservationState `json:"state"`
	// Reserved amounts count while State is Reserved; Settled ones always.
	ReservedTokens int64 `json:"reserved_tokens"`
	ReservedCost   int64 `json:"reserved_cost"`
	SettledTokens  int64 `json:"settled_tokens"`
	SettledCost    int64 `json:"settled_cost"`
}

// Spend is a tenant's use of one day: what its reservations count
// (settled plus open reservations), and how much of it is still reserved.
type Spend struct {
	Tenant         string `json:"tenant"`
	Day            string `json:"day"`
	Tokens         int64  `json:"tokens"`
	Cost           int64  `json:"cost"`
	ReservedTokens int64  `json:"reserved_tokens"`
	ReservedCost   int64  `json:"reserved_cost"`
	Open           int    `json:"open"`
}

// DayOf is the ledger's day of t: its UTC date.
func DayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// BudgetError is Reserve's refusal: the reservation would take the
// tenant's day past a limit. Reserve returns it wrapped in a fault.Error of
// class fault.Budget (not retried) whose Budget is "tokens_per_day" or
// "cost_per_day"; its message names the budget: tenant, day, limit, use.
type BudgetError struct {
	Tenant, Day string
	// What is "tokens" or "cost"; Limit and Used (before this call) and
	// Asked are in its unit (cost: micro-units).
	What               string
	Limit, Used, Asked int64
}

func (e *BudgetError) Error() string {
	tenant := e.Tenant
	if tenant == "" {
		tenant = "(default)"
	}
	unit := func(n int64) string { return fmt.Sprintf("%d", n) }
	if e.What == "cost" {
		unit = func(n int64) string { return fmt.Sprintf("%.6g", float64(n)/MicrosPerUnit) }
	}
	return fmt.Sprintf("budget %s_per_day of tenant %s on %s: limit %s, used %s, this call may use %s more: raise the limit in rein.yaml budgets: or wait for the next day (UTC)",
		e.What, tenant, e.Day, unit(e.Limit), unit(e.Used), unit(e.Asked))
}

// Over returns the refusal (a fault.Budget error wrapping a *BudgetError)
// of p's reservation on a day whose use is (usedTokens, usedCost), or nil
// when it fits p's limits. Both backends decide with it.
func (p *ReserveParams) Over(usedTokens, usedCost int64) error {
	var e *BudgetError
	switch {
	case p.LimitTokens > 0 && usedTokens+p.Tokens > p.LimitTokens:
		e = &BudgetError{Tenant: p.Tenant, Day: p.Day, What: "tokens", Limit: p.LimitTokens, Used: usedTokens, Asked: p.Tokens}
	case p.LimitCost > 0 && usedCost+p.Cost > p.LimitCost:
		e = &BudgetError{Tenant: p.Tenant, Day: p.Day, What: "cost", Limit: p.LimitCost, Used: usedCost, Asked: p.Cost}
	default:
		return nil
	}
	return &fault.Error{Class: fault.Budget, Budget: e.What + "_per_day", Err: e}
}

// Check reports what is wrong with p before a backend reads anything.
func (p *ReserveParams) Check() error {
	switch {
	case p.Key == "":
		return fmt.Errorf("reserve budget: the call's key is empty")
	case p.Day == "":
		return fmt.Errorf("reserve budget of call %s: the day is empty", p.Key)
	case p.Tokens < 0 || p.Cost < 0:
		return fmt.Errorf("reserve budget of call %s: negative amounts (%d tokens, %d cost)", p.Key, p.Tokens, p.Cost)
	}
	return nil
}
