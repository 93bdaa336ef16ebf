package rein

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/postgres"
	"github.com/reinhq/rein/store/sqlite"
)

// DefaultDB is where `rein run` keeps runs when neither --db nor REIN_DB
// says otherwise.
var DefaultDB = filepath.Join(".rein", "rein.db")

// DBFromEnv returns flagValue, else $REIN_DB, else DefaultDB.
func DBFromEnv(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv("REIN_DB"); v != "" {
		return v
	}
	return DefaultDB
}

// OpenStore opens the durable store a DSN names: postgres:// or
// postgresql:// for PostgreSQL, ":memory:" for a throwaway SQLite database,
// anything else a SQLite file (created with its folder if missing), which
// may end in "?checkpoint=external" (a file litestream replicates, see
// docs/durability.md) and "&synchronous=full" (sqlite.ParseDSN).
func OpenStore(ctx context.Context, dsn string) (store.Store, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		st, err := postgres.Open(ctx, dsn, nil)
		if err != nil {
			return nil, err
		}
		return st, nil
	case dsn == "":
		return nil, fmt.Errorf("open store: empty DSN: pass a SQLite file, :memory: or a postgres:// URL")
	}
	path, opts, err := sqlite.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	st, err := sqlite.Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return st, nil
}
