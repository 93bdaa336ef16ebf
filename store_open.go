package rein

import (
	"context"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/store"
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

// OpenStore opens the durable store a DSN names: store.Open, with the
// backends the program imports (cmd/rein imports both): store/postgres
// for postgres:// or postgresql:// URLs and libpq keyword/value DSNs
// ("host=db dbname=rein"), store/sqlite for ":memory:" (a throwaway
// database) and any other path, a SQLite file (created with its folder if
// missing), which may end in "?checkpoint=external" (a file litestream
// replicates, see docs/durability.md) and "&synchronous=full"
// (sqlite.ParseDSN). A DSN whose backend is not imported is an error
// naming the import to add.
func OpenStore(ctx context.Context, dsn string) (store.Store, error) {
	return store.Open(ctx, dsn)
}
