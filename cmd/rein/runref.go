package main

import (
	"context"
	"errors"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/store"
)

// resolveRun finds the run a RUN argument names (a full ID, a unique
// prefix, or "last"; rein.ResolveRun). A ref that names no run, or more
// than one, is bad usage (exit 2); any other failure exits 1.
func resolveRun(ctx context.Context, db store.Store, dsn, ref string) (*store.Run, error) {
	run, err := rein.ResolveRun(ctx, db, ref)
	if err == nil {
		return run, nil
	}
	var amb *rein.AmbiguousRunError
	if errors.As(err, &amb) {
		return nil, usageErr("%v", amb)
	}
	if ref == rein.LastRun && errors.Is(err, store.ErrNotFound) {
		return nil, usageErr("there is no last run: %s holds no runs yet", redactDSN(dsn))
	}
	return nil, runErr(dsn, ref, err)
}
