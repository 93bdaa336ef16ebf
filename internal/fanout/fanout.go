// Package fanout carries out the fan-outs a scheduler machine decides (a
// for_each step's items, a repeat step's rounds, a plan's steps, an agent
// turn's calls): it is the one place where they get goroutines. The
// machine (package internal/engine/sched/fan, or a runner's adapter over
// one) says which unit starts next and how many run at once; Run starts
// each on a goroutine of its own, or in place when nothing else could run
// meanwhile, and feeds every settlement back on the caller's goroutine.
package fanout

import "context"

// Source hands out a fan-out's units. Run calls its methods on the
// goroutine that called Run, one at a time, so a Source needs no lock.
type Source[U any] interface {
	// Next hands out the unit to start now, with inFlight units
	// running, or reports that none may start now.
	Next(inFlight int) (U, bool)
	// CanStart reports whether Next would hand out a unit with inFlight
	// units running. It must not change what Next hands out.
	CanStart(inFlight int) bool
	// Limit is the most units the source has in flight at once.
	Limit() int
}

// maxBuffer bounds the results channel: a worker past it waits for Run to
// take a result, never for a unit.
const maxBuffer = 64

// result is one unit's settlement on its way back to Run.
type result[U, R any] struct {
	u U
	r R
}

// Run carries out src's fan-out until src hands out nothing more and no
// unit is in flight. call runs one unit: on a goroutine of Run's, or on
// the caller's goroutine when nothing is in flight and no other unit
// could start before it settles (src.CanStart(1) is false), so a
// sequential fan-out starts no goroutine. settle gets each unit's result
// on the caller's goroutine, in settlement order, and feeds it to the
// machine; it is called for every unit handed out, even after an error.
//
// Once ctx ends, or settle returns an error, Run hands out nothing more.
// settle's first error also cancels the context of the units in flight
// (its cause is that error). Run returns only once every unit it started
// settled, with settle's first error or nil; ctx's end is the caller's to
// look at. No goroutine of Run's outlives it.
func Run[U, R any](ctx context.Context, src Source[U], call func(context.Context, U) R, settle func(U, R) error) error {
	var (
		results  chan result[U, R] // made with the first goroutine
		cctx     = ctx             // the units' context: cancellable once a goroutine runs
		cancel   context.CancelCauseFunc
		inFlight int
		first    error
	)
	for {
		for first == nil && ctx.Err() == nil {
			u, ok := src.Next(inFlight)
			if !ok {
				break
			}
			if inFlight == 0 && !src.CanStart(1) {
				// nothing else could run meanwhile: no goroutine.
				if err := settle(u, call(cctx, u)); err != nil {
					first = err
				}
				continue
			}
			if results == nil {
				results = make(chan result[U, R], min(src.Limit(), maxBuffer))
				cctx, cancel = context.WithCancelCause(ctx)
				defer cancel(nil)
			}
			inFlight++
			go func(u U) { results <- result[U, R]{u, call(cctx, u)} }(u)
		}
		if inFlight == 0 {
			return first
		}
		res := <-results
		inFlight--
		if err := settle(res.u, res.r); err != nil && first == nil {
			first = err
			cancel(err)
		}
	}
}

// Held is a Source that hands out no unit once Held reports true (nil:
// never): the units in flight finish and settle, the rest are not
// started. A failed premise holds the fan-outs of a run in flight so
// (package engine's for_each items and repeat rounds, an agent's calls).
type Held[U any] struct {
	Source[U]
	Held func() bool
}

// Next hands out the source's next unit, none once held.
func (h Held[U]) Next(inFlight int) (U, bool) {
	if h.Held != nil && h.Held() {
		var u U
		return u, false
	}
	return h.Source.Next(inFlight)
}

// CanStart is the source's, false once held.
func (h Held[U]) CanStart(inFlight int) bool {
	return (h.Held == nil || !h.Held()) && h.Source.CanStart(inFlight)
}
