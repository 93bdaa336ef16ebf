package rein_test

import (
	"context"
	"time"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// clientOf returns a Client wired as cfg says (nil: in memory), the way
// the engine's configuration of a run reads in these tests.
func clientOf(cfg *engine.Config) *rein.Client {
	c := rein.Config{}
	if cfg != nil {
		c = rein.Config{Store: cfg.Store, Sink: cfg.Sink, Gate: cfg.Gate, Owner: cfg.Owner, LeaseTTL: cfg.LeaseTTL, Redactor: cfg.Redactor}
	}
	cl, err := rein.Open(context.Background(), c)
	if err != nil {
		panic(err)
	}
	return cl
}

// loadClient returns a Client of st whose resumes load projects with load.
func loadClient(st store.Store, load *project.LoadOptions) (*rein.Client, error) {
	return rein.Open(context.Background(), rein.Config{Store: st, Load: load})
}

// resumeWith resumes run id with its already loaded project p.
func resumeWith(ctx context.Context, cfg *engine.Config, p *project.Project, id string) (*rein.Result, error) {
	out, err := clientOf(cfg).Resume(ctx, id, &rein.ResumeOptions{Project: p})
	if err != nil {
		return nil, err
	}
	return out.Result, nil
}

// openStore opens the store dsn names (drivers_test.go registers them).
func openStore(ctx context.Context, dsn string) (store.Store, error) { return store.Open(ctx, dsn) }

// workOpts are the settings of a worker in these tests: the Client's and
// the worker's in one.
type workOpts struct {
	Owner       string
	Concurrency int
	Poll        time.Duration
	LeaseTTL    time.Duration
	Grace       time.Duration
	Sink        trace.Sink
	Load        *project.LoadOptions
	Logf        func(format string, args ...any)
}

// runWorker runs a worker of st with o until ctx is done.
func runWorker(ctx context.Context, st store.Store, o *workOpts) error {
	if o == nil {
		o = &workOpts{}
	}
	c, err := rein.Open(ctx, rein.Config{Store: st, Owner: o.Owner, LeaseTTL: o.LeaseTTL, Sink: o.Sink, Load: o.Load})
	if err != nil {
		return err
	}
	return c.Work(ctx, &rein.WorkerOptions{Concurrency: o.Concurrency, Poll: o.Poll, Grace: o.Grace, Logf: o.Logf})
}
