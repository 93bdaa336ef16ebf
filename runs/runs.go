// Package runs holds the read models over a durable run's records: a run's
// row and view (Show), the list, why each step and call did what it did
// (Why), the effects the run had on the world (Effects) and the impact of a
// failed premise with the remediation plan it calls for (Impact). It reads
// the store and never writes: the operations that change runs (resume,
// decide, cancel, remediate, prune) are the root package's Client.
//
// Its errors are classed *fault.Error values with a fault.Hint: a ref that
// names no run is not_found (HintNoRun), a prefix of several runs a
// conflict (HintAmbiguousRun) wrapping an *AmbiguousError.
package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/store"
)

// Reader reads the durable runs of a store. It is safe for concurrent use.
type Reader struct {
	st   store.Store
	load project.LoadOptions
	gate safety.Gate
}

// Options configure a Reader. A nil *Options means defaults.
type Options struct {
	// Load says how a run's pinned project is rebuilt for Why, Effects and
	// Impact (project.LoadPinned): the Go tools and models the program
	// gives, Workflow. Defaults to what each run recorded.
	Load *project.LoadOptions
	// Gate is the gate Impact previews undos and compensations with,
	// besides the project's own rules. Defaults to none.
	Gate safety.Gate
}

// New returns a Reader of st, which must be durable.
func New(st store.Store, opts *Options) (*Reader, error) {
	if st == nil || store.IsEphemeral(st) {
		return nil, errors.New("runs: a Reader needs a durable store (store.Open)")
	}
	r := &Reader{st: st}
	if opts != nil {
		if opts.Load != nil {
			r.load = *opts.Load
		}
		r.gate = opts.Gate
	}
	return r, nil
}

// Store returns the store r reads.
func (r *Reader) Store() store.Store { return r.st }

// Get resolves ref (a run ID, a unique prefix of one, or "last"; see
// Resolve) to its run row. A ref that names no run is a not_found error
// (HintNoRun); a prefix of several runs is a conflict (HintAmbiguousRun)
// wrapping an *AmbiguousError.
func (r *Reader) Get(ctx context.Context, ref string) (*store.Run, error) {
	run, err := Resolve(ctx, r.st, ref)
	if err == nil {
		return run, nil
	}
	var amb *AmbiguousError
	switch {
	case errors.As(err, &amb):
		return nil, fault.Hinted(fault.Conflict, fault.Hint{Code: fault.HintAmbiguousRun}, err)
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Hinted(fault.NotFound, fault.Hint{Code: fault.HintNoRun}, err)
	}
	return nil, err
}

// List returns the rows of the runs p selects, newest first. Nil p lists
// every run; a ctx scoped to a tenant (WithTenant) lists only its runs.
func (r *Reader) List(ctx context.Context, p *store.ListRunsParams) ([]*Row, error) {
	runs, err := r.st.ListRuns(ctx, scoped(ctx, p))
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	rows := make([]*Row, len(runs))
	for i, run := range runs {
		rows[i] = NewRow(run)
	}
	return rows, nil
}

// Load reads the run ref names (as Get) and loads its pinned project
// (project.LoadPinned) with r's load options. The caller closes the
// project.
func (r *Reader) Load(ctx context.Context, ref string) (*store.Run, *project.Project, error) {
	run, err := r.Get(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	p, err := project.LoadPinned(run, &r.load)
	if err != nil {
		return nil, nil, err
	}
	return run, p, nil
}
