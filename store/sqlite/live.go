package sqlite

import "fmt"

// The runs in flight (pending, running, waiting) are found through
// runs_live (migration 0002): the rk of each such run up to
// journal_mark.runs, written in bulk by the batch that moves the mark
// (indexJournal), and the tail of runs after the mark, which readers scan.
// A run's creation writes nothing to it, and a run that settles before the
// mark passes it never enters it; a run below the mark leaves it when it
// settles. So a short run costs no index write at all, where the partial
// index this replaces cost two b-tree writes a run.

// liveStatuses are the statuses runs_live tracks, as an SQL list.
const liveStatuses = `('pending', 'running', 'waiting')`

// liveRuns selects the rk of every run that may be in flight, in rk order
// within each arm: runs_live and the tail (the caller checks the status).
const liveRuns = `SELECT rk FROM runs_live UNION ALL SELECT rk FROM runs WHERE rk > (SELECT runs FROM journal_mark WHERE one = 1)`

// isLive reports whether status is one runs_live tracks.
func isLive(status string) bool {
	return status == "pending" || status == "running" || status == "waiting"
}

// liveMark is journal_mark.runs as the batch sees it: what it set or read,
// else the writer's (unless the batch pruned), else read now.
func (x *wtx) liveMark() (int64, error) {
	if x.mark < 0 && !x.reset && x.w.mark >= 0 {
		return x.w.mark, nil
	}
	if x.mark < 0 {
		if err := x.queryRow(stmtSQL[stLiveMark]).Scan(&x.mark); err != nil {
			return 0, fmt.Errorf("read the index mark: %w", err)
		}
	}
	return x.mark, nil
}

// noteStatus keeps runs_live true for run rk, whose status a commit set:
// a run below the mark leaves it when it settles, and enters it again if it
// is ever put back in flight. Runs after the mark are the bulk's.
func (x *wtx) noteStatus(rk int64, status string, final bool) error {
	if !final && !isLive(status) {
		return nil
	}
	mark, err := x.liveMark()
	if err != nil || rk > mark {
		return err
	}
	q := stmtSQL[stEnterLive]
	if final {
		q = stmtSQL[stLeaveLive]
	}
	if _, err := x.exec(q, rk); err != nil {
		return fmt.Errorf("update the runs in flight: %w", err)
	}
	return nil
}
