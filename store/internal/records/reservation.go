package records

import "github.com/reinhq/rein/store"

// Scanner is a row of database/sql (a *sql.Row or *sql.Rows).
type Scanner interface{ Scan(dest ...any) error }

// ReservationCols are the columns of a budget ledger row, in the order
// ScanReservation reads them; both stores' tables name them alike.
const ReservationCols = `tenant, day, key, run_id, state, reserved_tokens, reserved_cost, settled_tokens, settled_cost`

// ScanReservation reads a row of ReservationCols.
func ScanReservation(row Scanner) (*store.Reservation, error) {
	var r store.Reservation
	var state string
	if err := row.Scan(&r.Tenant, &r.Day, &r.Key, &r.RunID, &state, &r.ReservedTokens, &r.ReservedCost,
		&r.SettledTokens, &r.SettledCost); err != nil {
		return nil, err
	}
	r.State = store.ReservationState(state)
	return &r, nil
}
