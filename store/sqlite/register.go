package sqlite

import (
	"context"

	"github.com/reinhq/rein/store"
)

// Importing the package registers it with store.Open for file paths,
// ":memory:" and "file:…" (store.SchemeFile) and "sqlite:…" DSNs.
func init() {
	store.Register(store.SchemeFile, openDSN)
	store.Register("sqlite", openDSN)
}

// openDSN is the store.Opener of SQLite: ParseDSN, then Open.
func openDSN(ctx context.Context, dsn string) (store.Store, error) {
	path, opts, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	st, err := Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return st, nil
}
