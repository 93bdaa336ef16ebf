package fan

// State is a DAG node's state.
type State uint8

// The states of a DAG node.
const (
	Pending   State = iota // not handed out
	Running                // handed out, not settled
	Succeeded              // settled with an output: releases its dependents
	Failed                 // settled without one: nothing more is handed out
	Waiting                // waits for a person: its dependents wait too
)

// DAG decides a fan-out over n units that depend on each other (a plan's
// steps): it hands out, in index order, the first pending unit whose
// dependencies all succeeded, at most its limit in flight and at most its
// budget of units over the caller's whole run (a unit handed out counts;
// one that settles without having run gives its count back). After a
// failure, or once the budget would be crossed, it hands out nothing more;
// the units in flight finish. The zero DAG hands out nothing; Reset sizes
// it.
type DAG struct {
	deps     [][]int
	state    []State
	limit    int
	executed int
	budget   int
	over     int // the unit the budget refused, or -1
	lo       int // every unit below lo is past pending
	failed   bool
	stopped  bool
}

// Reset makes d the machine of a fan-out over len(deps) units, unit i
// waiting on the units deps[i] (each lower or higher, never i), with at
// most limit in flight (limit < 1 counts as 1), executed units already
// counted against budget. It reuses d's buffers; deps is d's until the
// next Reset and is not changed.
func (d *DAG) Reset(deps [][]int, limit, executed, budget int) {
	n := len(deps)
	if cap(d.state) < n {
		d.state = make([]State, n)
	} else {
		d.state = d.state[:n]
		clear(d.state)
	}
	d.deps, d.limit, d.executed, d.budget = deps, max(limit, 1), executed, budget
	d.over, d.failed, d.stopped, d.lo = -1, false, false, 0
}

// Reuse marks unit i succeeded before this fan-out (a completed step a
// new plan lists again): it is never handed out and releases its
// dependents. Call it before the first Next.
func (d *DAG) Reuse(i int) { d.state[i] = Succeeded }

// State is unit i's state.
func (d *DAG) State(i int) State { return d.state[i] }

// Limit is the most units in flight at once.
func (d *DAG) Limit() int { return d.limit }

// Executed is how many units count against the budget, the caller's
// earlier ones included.
func (d *DAG) Executed() int { return d.executed }

// OverBudget is the unit that was ready when the budget was spent (the
// fan-out stopped there), or -1.
func (d *DAG) OverBudget() int { return d.over }

// ready reports whether every dependency of unit i succeeded.
func (d *DAG) ready(i int) bool {
	for _, k := range d.deps[i] {
		if d.state[k] != Succeeded {
			return false
		}
	}
	return true
}

// first is the first pending unit whose dependencies succeeded, or -1.
func (d *DAG) first() int {
	for d.lo < len(d.state) && d.state[d.lo] != Pending {
		d.lo++
	}
	for i := d.lo; i < len(d.state); i++ {
		if d.state[i] == Pending && d.ready(i) {
			return i
		}
	}
	return -1
}

// CanStart reports whether Next would hand out a unit with inFlight
// units running (false, too, when the next one would cross the budget).
func (d *DAG) CanStart(inFlight int) bool {
	if d.failed || d.stopped || inFlight >= d.limit {
		return false
	}
	return d.first() >= 0 && d.executed < d.budget
}

// Next hands out the first pending unit, in index order, whose
// dependencies all succeeded, with inFlight units running, and counts it
// against the budget. When that unit would cross the budget it stops the
// fan-out instead (OverBudget names the unit). It hands out nothing while
// the limit is reached, after a failure and once stopped.
func (d *DAG) Next(inFlight int) (int, bool) {
	if d.failed || d.stopped || inFlight >= d.limit {
		return 0, false
	}
	i := d.first()
	if i < 0 {
		return 0, false
	}
	if d.executed >= d.budget {
		d.over, d.stopped = i, true
		return 0, false
	}
	d.state[i] = Running
	d.executed++
	return i, true
}

// Settle gives handed-out unit i its final state (Succeeded, Failed or
// Waiting). ran says whether it counts against the budget: a unit that
// failed before its call, or waits for a person without having run,
// gives its count back.
func (d *DAG) Settle(i int, st State, ran bool) {
	d.state[i] = st
	if !ran {
		d.executed--
	}
	if st == Failed {
		d.failed = true
	}
}

// Stop hands out nothing more.
func (d *DAG) Stop() { d.stopped = true }

// Done reports whether every unit succeeded.
func (d *DAG) Done() bool {
	for _, st := range d.state {
		if st != Succeeded {
			return false
		}
	}
	return true
}
