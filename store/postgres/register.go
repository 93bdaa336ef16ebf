package postgres

import (
	"context"

	"github.com/reinhq/rein/store"
)

// Importing the package registers it with store.Open for postgres:// and
// postgresql:// URLs and libpq keyword/value DSNs (store.SchemePostgres).
func init() {
	store.Register(store.SchemePostgres, openDSN)
	store.Register("postgresql", openDSN)
}

// openDSN is the store.Opener of PostgreSQL: Open with default Options.
func openDSN(ctx context.Context, dsn string) (store.Store, error) {
	st, err := Open(ctx, dsn, nil)
	if err != nil {
		return nil, err
	}
	return st, nil
}
