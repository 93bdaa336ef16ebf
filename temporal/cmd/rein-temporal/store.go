package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/store"
)

// defaultDB is the run store a worker opens when neither --store nor
// REIN_DB names one: the one a local rein run uses (cmd/rein).
var defaultDB = filepath.Join(".rein", "rein.db")

// storeFlag is a worker's run store: --store, or --db as local commands
// name it (the same value).
type storeFlag struct{ dsn string }

func (s *storeFlag) add(fs *flag.FlagSet) {
	const what = "the run store the worker keeps the tenants' daily spend and the invalidated resources in: a SQLite file or a postgres:// URL, shared by every worker (default: $REIN_DB, else .rein/rein.db)"
	fs.StringVar(&s.dsn, "store", "", what)
	fs.StringVar(&s.dsn, "db", "", "the same as --store")
}

// open opens the store the flag (else REIN_DB, else defaultDB) names. A
// DSN that does not open is bad usage; its password is never repeated.
func (s *storeFlag) open(ctx context.Context) (store.Store, string, error) {
	dsn := s.dsn
	if dsn == "" {
		dsn = os.Getenv("REIN_DB")
	}
	if dsn == "" {
		dsn = defaultDB
	}
	st, err := store.Open(ctx, dsn)
	if errors.Is(err, store.ErrDamaged) {
		return nil, redact.DSN(dsn), fmt.Errorf("--store %s: %w (rein runs check --db %s lists what is wrong)", redact.DSN(dsn), err, redact.DSN(dsn))
	}
	if err != nil {
		return nil, redact.DSN(dsn), usageErr(fmt.Sprintf("--store %s: %v", redact.DSN(dsn), err))
	}
	return st, redact.DSN(dsn), nil
}

// closeStore closes st, reporting a failure on stderr.
func closeStore(st store.Store, stderr io.Writer) {
	if err := st.Close(); err != nil {
		fmt.Fprintf(stderr, "rein worker: closing the run store: %v\n", err)
	}
}
