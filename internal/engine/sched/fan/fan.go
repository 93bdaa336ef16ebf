// Package fan holds the scheduler's decisions for the fan-outs inside one
// step: a for_each step's items, a repeat step's rounds, an agent turn's
// calls (Fan: independent units in index order) and a plan's steps (DAG:
// units that wait on others). Like package sched it is pure: no I/O, no
// clock, no goroutine, no map, so the same settlements give the same
// decisions. It imports nothing of rein's, so that internal/plan and
// internal/agent, which must not import the engine, decide with it too;
// package sched builds the flow's own rules (on_error per item,
// repeat.until) on it. Package internal/fanout carries the decisions out.
//
// A machine is not safe for concurrent use: the goroutine that drives the
// fan-out asks it and feeds it every settlement.
package fan

// Op is what a handed-out unit is to do.
type Op uint8

// The ops of a Unit.
const (
	// Run: the unit's own work (an item's attempts, a round, a call).
	Run Op = iota
	// Recover: the unit failed and its failure is to be recovered (a
	// for_each item's fallback); handed out before any unit not yet begun.
	Recover
)

// Unit is a unit handed out by Fan.Next.
type Unit struct {
	Index int
	Op    Op
}

// Fan decides a fan-out over n independent units: it hands them out in
// index order, at most its limit in flight, skips those settled before (a
// resume), hands a unit out again to recover it when asked (Again), and
// hands out nothing more once stopped (a failure, or the caller's
// decision) or closed (the whole is done early: a repeat's until held).
// The zero Fan hands out nothing; Reset sizes it.
type Fan struct {
	n, limit int
	next     int    // the first unit not handed out yet
	skip     []bool // units settled before: never handed out (nil: none)
	again    []int  // units to hand out again (Recover), in settlement order
	settled  int
	stopped  bool
	closed   bool
}

// Reset makes f the machine of a fan-out over n units with at most limit
// in flight (limit < 1 counts as 1), reusing f's buffers.
func (f *Fan) Reset(n, limit int) {
	f.n, f.limit, f.next, f.settled = n, max(limit, 1), 0, 0
	f.skip, f.again, f.stopped, f.closed = f.skip[:0], f.again[:0], false, false
}

// Len is the number of units.
func (f *Fan) Len() int { return f.n }

// Limit is the most units in flight at once.
func (f *Fan) Limit() int { return f.limit }

// Skip marks unit k settled before the fan-out began (a resumed step's
// settled item): it is never handed out. Call it before the first Next.
func (f *Fan) Skip(k int) {
	if len(f.skip) < f.n {
		f.skip = append(f.skip[:0], make([]bool, f.n)...)
	}
	if !f.skip[k] {
		f.skip[k] = true
		f.settled++
	}
}

// CanStart reports whether Next would hand out a unit with inFlight
// units running.
func (f *Fan) CanStart(inFlight int) bool {
	if f.stopped || inFlight >= f.limit {
		return false
	}
	if len(f.again) > 0 {
		return true
	}
	if f.closed {
		return false
	}
	for f.next < f.n && f.next < len(f.skip) && f.skip[f.next] {
		f.next++
	}
	return f.next < f.n
}

// Next hands out the next unit with inFlight units running: a unit to
// recover first (Op Recover), else the lowest-numbered unit not handed
// out yet (Op Run). It hands out nothing while the limit is reached, once
// the fan-out stopped, and (Op Run) once it was closed.
func (f *Fan) Next(inFlight int) (Unit, bool) {
	if !f.CanStart(inFlight) {
		return Unit{}, false
	}
	if len(f.again) > 0 {
		k := f.again[0]
		f.again = f.again[1:]
		return Unit{Index: k, Op: Recover}, true
	}
	k := f.next
	f.next++
	return Unit{Index: k, Op: Run}, true
}

// Settle records that unit k settled for good.
func (f *Fan) Settle(k int) { f.settled++ }

// Again makes unit k, which failed, be handed out once more with Op
// Recover (before any unit not yet begun).
func (f *Fan) Again(k int) { f.again = append(f.again, k) }

// Stop hands out nothing more: the fan-out failed, or its caller stops it.
// The units in flight are the caller's to cancel and wait for.
func (f *Fan) Stop() { f.stopped = true }

// Stopped reports whether Stop was called.
func (f *Fan) Stopped() bool { return f.stopped }

// Close hands out no unit not begun yet (those to recover still go): the
// whole is done early.
func (f *Fan) Close() { f.closed = true }

// Done reports whether every unit settled (Skip counts).
func (f *Fan) Done() bool { return f.settled == f.n }
