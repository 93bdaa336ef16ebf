package sqlite

import (
	"math/bits"
	"strconv"
	"strings"

	"github.com/reinhq/rein/journal"
)

// stmtID names a statement the writer prepares once.
type stmtID int

const (
	stUpdateRun stmtID = iota
	stHead
	stInsertBlob
	stInsertBlobRef
	stInsertApproval
	stRunExists
	stRunKey
	stCreateRun
	stRunByKey
	stReleaseLease
	stRenewLease
	stIndexJournal
	stIndexRuns
	stMarkJournal
	stIndexLive
	stLeaveLive
	stEnterLive
	stLiveMark
	stInsertFlow
	stCloseApprovals
	nStmts
)

// headOf is the id of the newest journal row of the run whose rk is the
// SQL expression rk: the last row of its newest transition in
// journal_index, or of the tail not indexed yet.
func headOf(rk string) string {
	return `(SELECT max(id) FROM (SELECT (SELECT last FROM journal_index WHERE rk = ` + rk + ` ORDER BY id DESC LIMIT 1) AS id
		UNION ALL SELECT max(id) FROM journal WHERE id > (SELECT indexed FROM journal_mark WHERE one = 1) AND rk = ` + rk + `))`
}

// headVersion is the version of a run (rk an SQL expression naming its
// key, version its runs.version): the larger of the run row's and the
// run_version of its newest journal row.
func headVersion(rk, version string) string {
	return `max(` + version + `, coalesce((SELECT run_version FROM journal WHERE id = ` + headOf(rk) + `), 0))`
}

var stmtSQL = [nStmts]string{
	// The writer's statements take plain ? parameters: the driver looks up
	// the name of every ?NNN parameter at every bind (an allocation and a
	// search each).
	stUpdateRun: `UPDATE runs SET version = ?, updated_at = ?,
		status = coalesce(?, status), error = coalesce(?, error), usage = coalesce(?, usage),
		settled_at = coalesce(?, settled_at),
		lease_owner = iif(?, NULL, lease_owner), lease_expires = iif(?, NULL, lease_expires)
		WHERE rk = ? AND id = ?`,
	stHead: `SELECT r.version, coalesce(h.run_version, 0), coalesce(h.seq, 0) FROM runs r LEFT JOIN journal h ON h.id = ` + headOf("r.rk") + `
		WHERE r.rk = ? AND r.id = ?`,
	stRunKey:        `SELECT rk FROM runs WHERE id = ?`,
	stInsertBlob:    `INSERT INTO blobs (sha256, data) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING`,
	stInsertBlobRef: `INSERT INTO blob_refs (sha256, rk) VALUES (?, ?) ON CONFLICT DO NOTHING`,
	stInsertApproval: `INSERT INTO approvals (run_id, id, step_id, kind, status, tool, args, message, output,
		comment, decided_by, created_at, decided_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stRunExists: `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?)`,
	stCreateRun: `INSERT INTO runs (id, flow, flow_path, flow_hash, flow_sha, input, meta,
		status, idempotency_key, session, tenant, lease_owner, lease_expires, created_at, updated_at, retention)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stRunByKey:     `SELECT ` + runCols + ` FROM runs r WHERE idempotency_key = ?`,
	stReleaseLease: `UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE id = ? AND lease_owner = ?`,
	stRenewLease:   `UPDATE runs SET lease_expires = ? WHERE id = ? AND lease_owner = ? AND lease_expires > ?`,
	stIndexJournal: `INSERT INTO journal_index (rk, id, last)
		SELECT rk, id, id + rows - 1 FROM journal WHERE id > (SELECT indexed FROM journal_mark WHERE one = 1) AND rows IS NOT NULL`,
	stIndexRuns: `INSERT INTO run_flows (flow, rk)
		SELECT flow, rk FROM runs WHERE rk > (SELECT runs FROM journal_mark WHERE one = 1)`,
	stMarkJournal: `UPDATE journal_mark SET indexed = (SELECT coalesce(max(id), 0) FROM journal),
		runs = (SELECT coalesce(max(rk), 0) FROM runs) WHERE one = 1 RETURNING runs`,
	stIndexLive: `INSERT OR IGNORE INTO runs_live (rk)
		SELECT rk FROM runs WHERE rk > (SELECT runs FROM journal_mark WHERE one = 1) AND status IN ` + liveStatuses,
	stLeaveLive:  `DELETE FROM runs_live WHERE rk = ?`,
	stEnterLive:  `INSERT OR IGNORE INTO runs_live (rk) VALUES (?)`,
	stLiveMark:   `SELECT runs FROM journal_mark WHERE one = 1`,
	stInsertFlow: `INSERT INTO flows (sha256, text) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING`,
	stCloseApprovals: `UPDATE approvals SET status = 'rejected', comment = ?, decided_at = ?
		WHERE run_id = ? AND status = 'pending'`,
}

// indexEvery is how many transitions' journal rows may wait for
// journal_index, and how many runs for run_flows: the tails readers scan.
// The batch that reaches either indexes both.
const indexEvery = 256

// maxRowsLog2: the multi-row statement inserts 1, 2, 4, … 64 journal rows.
const maxRowsLog2 = 6

// journalArgs is the number of values of one journal row; its record
// version is the statement's own (journal.Version).
const journalArgs = 16

// journalSQL[k] inserts 1<<k journal rows.
var journalSQL = func() (out [maxRowsLog2 + 1]string) {
	for k := range out {
		out[k] = valuesSQL(journalInsert, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "+strconv.Itoa(journal.Version)+")", 1<<k)
	}
	return out
}()

// journalInsert is the head of journalSQL: journal columns in the order
// of appendJournal, and the record version.
const journalInsert = `INSERT INTO journal (rk, seq, kind, step_id, status, attempt, at, call_key, payload, record, output, input, error,
	run_version, committed_at, rows, version) VALUES `

// valuesSQL is head followed by n times group.
func valuesSQL(head, group string, n int) string {
	var b strings.Builder
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(group)
	}
	return b.String()
}

// rowBuf holds the journal rows a batch has queued: n rows of
// transitions transitions.
type rowBuf struct {
	args           []any
	n, transitions int
}

// flush inserts the queued rows with sqls[k], the statement of 1<<k rows
// of width values each, and empties b.
func (b *rowBuf) flush(x *wtx, sqls *[maxRowsLog2 + 1]string, width int) error {
	off := 0
	for left := b.n; left > 0; {
		k := min(bits.Len(uint(left))-1, maxRowsLog2)
		n := 1 << k
		if _, err := x.exec(sqls[k], b.args[off:off+n*width]...); err != nil {
			return mapErr(err)
		}
		off += n * width
		left -= n
	}
	clear(b.args)
	b.args, b.n, b.transitions = b.args[:0], 0, 0
	return nil
}
