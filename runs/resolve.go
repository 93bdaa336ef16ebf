package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/store"
)

// Last is the run reference Resolve reads as "the newest run of the
// store".
const Last = "last"

// maxCandidates is how many matching runs an ambiguous prefix lists.
const maxCandidates = 10

// AmbiguousError is the error of a run ID prefix that matches more than
// one run. Its class is conflict.
type AmbiguousError struct {
	// Prefix is the reference that was given.
	Prefix string
	// Candidates are the matching runs, newest first, at most ten.
	Candidates []*store.Run
	// More reports that further runs match beyond Candidates.
	More bool
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run ID prefix %q matches more than one run; give more of the ID:", e.Prefix)
	for _, r := range e.Candidates {
		fmt.Fprintf(&b, "\n  %s  %s  %s", r.ID, r.Flow, r.Status)
	}
	if e.More {
		b.WriteString("\n  …")
	}
	return b.String()
}

// Resolve finds the run that ref names in st: a full run ID, "last" (the
// newest run), or a prefix of exactly one run's ID. An exact ID wins over
// both readings, so a run whose ID is "last" is still reachable. A ref that
// names no run is a not_found error wrapping store.ErrNotFound; a prefix of
// several runs is a conflict error holding an *AmbiguousError. A ctx
// scoped to a tenant (WithTenant) finds only that tenant's runs.
func Resolve(ctx context.Context, st store.Store, ref string) (*store.Run, error) {
	if ref == "" {
		return nil, fault.New(fault.NotFound, fmt.Errorf("empty run ID: %w", store.ErrNotFound))
	}
	run, err := st.GetRun(ctx, ref)
	if err == nil {
		if err := visible(ctx, run, ref); err != nil {
			return nil, err
		}
		return run, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return run, err
	}
	if ref == Last {
		runs, err := st.ListRuns(ctx, scoped(ctx, &store.ListRunsParams{Limit: 1}))
		if err != nil {
			return nil, err
		}
		if len(runs) == 0 {
			return nil, fault.New(fault.NotFound, fmt.Errorf("no runs yet, so there is no last run: %w", store.ErrNotFound))
		}
		return st.GetRun(ctx, runs[0].ID)
	}
	runs, err := st.ListRuns(ctx, scoped(ctx, &store.ListRunsParams{IDPrefix: ref, Limit: maxCandidates + 1}))
	if err != nil {
		return nil, err
	}
	switch len(runs) {
	case 0:
		return nil, fault.New(fault.NotFound, fmt.Errorf("run %s: %w", ref, store.ErrNotFound))
	case 1:
		return st.GetRun(ctx, runs[0].ID)
	}
	amb := &AmbiguousError{Prefix: ref, Candidates: runs}
	if len(runs) > maxCandidates {
		amb.Candidates, amb.More = runs[:maxCandidates], true
	}
	return nil, fault.New(fault.Conflict, amb)
}
