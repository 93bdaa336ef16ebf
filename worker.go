package rein

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/store"
)

// WorkerOptions configure Work. Every field may be left zero; a nil
// *WorkerOptions means defaults. The runs' sink, gate, lease owner and TTL
// and load options are the Client's (Config).
type WorkerOptions struct {
	// Concurrency is the most runs the worker advances at once. Defaults
	// to 4.
	Concurrency int
	// Poll is how long the worker waits before it asks again when no run
	// was ready. Defaults to 1s.
	Poll time.Duration
	// Grace is how long runs in flight may go on once ctx is done before
	// the worker abandons them. Defaults to 0: abandon at once.
	Grace time.Duration
	// Logf reports what the worker does (claims, outcomes, errors).
	// Defaults to discarding.
	Logf func(format string, args ...any)
	// Started, when set, is called once, after the worker's first claim
	// succeeded: the runs in flight it found ready (orphaned or enqueued)
	// are being advanced. A server reports itself ready then.
	Started func()
}

// Work advances the durable runs of the client's store that are ready
// (pending runs that were enqueued, and running runs whose process died
// and whose lease expired) until ctx is done. It claims up to
// opts.Concurrency runs at a time with store.ClaimRuns and resumes each one
// as Resume does (the project rebuilt from the flow the run pinned with
// Config.Load, the same checks, the same *Error values); several workers,
// in one process or many, may share the store, and a run is only ever
// advanced by the worker holding its lease.
//
// When ctx is done, Work stops claiming, lets runs in flight go on for
// opts.Grace, then abandons the rest: it stops them with an interruption,
// so they record nothing more (their last committed transition stands, as
// after a crash) and release their leases, and another worker resumes
// them at once. Work returns nil once every run it took up has finished or
// been abandoned. A claim that fails (the database is away) is logged and
// retried after opts.Poll. A run that cannot resume here (its flow does
// not load, it needs Go tools, API keys or an encryption key this worker
// lacks: fault.HintNeedsTools, fault.HintNeedsAPIKey, fault.HintNeedsKey)
// is logged with the error,
// left as it was and leased until its lease expires, then tried again (by
// any worker).
func (c *Client) Work(ctx context.Context, opts *WorkerOptions) error {
	if err := c.durable("Work"); err != nil {
		return err
	}
	w := &worker{c: c, live: map[string]*workRun{}}
	if opts != nil {
		w.o = *opts
	}
	if w.o.Concurrency <= 0 {
		w.o.Concurrency = 4
	}
	if w.o.Poll <= 0 {
		w.o.Poll = time.Second
	}
	if w.o.Logf == nil {
		w.o.Logf = func(string, ...any) {}
	}
	w.owner, w.ttl = c.cfg.Owner, c.cfg.LeaseTTL
	if w.ttl <= 0 {
		w.ttl = engine.DefaultLeaseTTL
	}
	return w.loop(ctx)
}

type worker struct {
	c     *Client // resumes the runs the worker claims
	o     WorkerOptions
	owner string
	ttl   time.Duration
	mu    sync.Mutex
	live  map[string]*workRun
	wg    sync.WaitGroup
}

// workRun is one run in flight and the means to abandon it.
type workRun struct {
	id        string
	cancel    context.CancelCauseFunc
	abandoned atomic.Bool
}

func (w *worker) loop(ctx context.Context) error {
	done := make(chan struct{}, w.o.Concurrency)
	inFlight := 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		if free := w.o.Concurrency - inFlight; free > 0 && ctx.Err() == nil {
			runs, err := w.c.st.ClaimRuns(ctx, &store.ClaimParams{Owner: w.owner, TTL: w.ttl, Limit: free, Now: time.Now()})
			if err != nil && ctx.Err() == nil {
				w.o.Logf("worker %s: claim runs: %v (trying again in %s)", w.owner, err, w.o.Poll)
			}
			for _, run := range runs {
				inFlight++
				w.start(ctx, run, done)
			}
			if err == nil && w.o.Started != nil {
				w.o.Started()
				w.o.Started = nil
			}
		}
		timer.Reset(w.o.Poll)
		select {
		case <-ctx.Done():
			w.shutdown()
			return nil
		case <-done:
			inFlight--
		case <-timer.C:
		}
	}
}

// start advances run on its own goroutine; done receives when it ends.
func (w *worker) start(ctx context.Context, run *store.Run, done chan<- struct{}) {
	// The run does not stop with ctx: shutdown decides when to abandon it.
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	wr := &workRun{id: run.ID, cancel: cancel}
	w.mu.Lock()
	w.live[run.ID] = wr
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { done <- struct{}{} }()
		defer cancel(nil)
		w.advance(rctx, run, wr)
		w.mu.Lock()
		delete(w.live, run.ID)
		w.mu.Unlock()
	}()
}

func (w *worker) advance(ctx context.Context, run *store.Run, wr *workRun) {
	w.o.Logf("worker %s: run %s (flow %s, %s): advancing", w.owner, run.ID, run.Flow, run.Status)
	out, err := w.c.resume(ctx, run.ID, nil)
	if err == nil {
		res := out.Result
		switch {
		case res.Interrupted:
			w.o.Logf("worker %s: run %s: abandoned at shutdown; its last committed transition stands for another worker", w.owner, run.ID)
		default:
			msg := ""
			if res.Error != nil {
				msg = ": " + res.Error.Error()
			}
			w.o.Logf("worker %s: run %s (flow %s): %s%s", w.owner, run.ID, run.Flow, res.Status, msg)
		}
	}
	if wr.abandoned.Load() {
		// never leave an abandoned run leased to a worker that is gone
		// (the engine releases the lease of a run it stopped; this one
		// may have been abandoned before the engine took it up).
		_ = w.c.st.ReleaseLease(context.WithoutCancel(ctx), run.ID, w.owner)
		return
	}
	if err != nil {
		w.o.Logf("worker %s: run %s: %v (left leased until %s, then tried again)", w.owner, run.ID, err, w.ttl)
	}
}

// shutdown waits Grace for the runs in flight, then abandons the rest.
func (w *worker) shutdown() {
	finished := make(chan struct{})
	go func() { w.wg.Wait(); close(finished) }()
	if w.o.Grace > 0 {
		t := time.NewTimer(w.o.Grace)
		select {
		case <-finished:
			t.Stop()
			return
		case <-t.C:
		}
	}
	w.mu.Lock()
	for _, wr := range w.live {
		wr.abandoned.Store(true)
		wr.cancel(engine.ErrInterrupted)
	}
	w.mu.Unlock()
	<-finished
}
