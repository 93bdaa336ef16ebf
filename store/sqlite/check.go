package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"

	"modernc.org/sqlite"

	"github.com/reinhq/rein/journal"
	sqlite3 "modernc.org/sqlite/lib"
)

// maxIntegrityLines caps the problems Check quotes from integrity_check.
const maxIntegrityLines = 20

// Report is what Check found in a database.
type Report struct {
	Path string `json:"path"`
	// Problems are damage: while there is any, Open refuses the database
	// (or SQLite finds the damage on use). Restore it from a backup.
	Problems []string `json:"problems"`
	// Notes lose nothing that was committed, e.g. the torn frames of a
	// transaction a stopped process was writing, which SQLite ignores.
	Notes []string `json:"notes,omitempty"`
	// Pages is the database's size in pages as SQLite sees it (with the
	// WAL); WALFrames and WALCommits count the log's intact frames and the
	// transactions they commit.
	Pages      int `json:"pages"`
	WALFrames  int `json:"wal_frames"`
	WALCommits int `json:"wal_commits"`
}

// OK reports whether Check found no damage.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Check examines the database at path without changing it: the file's
// header and size against its pages (what Open checks), every frame of
// the write-ahead log with SQLite's checksums (frames after a damaged one
// are dropped by SQLite's recovery: committed transactions among them are
// a problem, an uncommitted torn tail a note), and, read-only, SQLite's
// PRAGMA integrity_check over every page, index and constraint, and every
// journal record decoded as a read of its run would. integrity_check reads
// the whole file: about 0.3 s per 100 MB. The error is for a
// check that could not run (an unreadable file, a file that is no SQLite
// database); damage is in the Report.
func Check(ctx context.Context, path string) (*Report, error) {
	r := &Report{Path: path, Problems: []string{}}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqlite: check %s: %w", path, err)
	}
	problems, err := damage(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: check %s: %w", path, err)
	}
	r.Problems = problems
	wal, err := scanWAL(path + "-wal")
	if err != nil {
		return nil, fmt.Errorf("sqlite: check %s-wal: %w", path, err)
	}
	r.WALFrames, r.WALCommits = wal.valid, wal.commits
	switch {
	case wal.badHeader != "" && len(r.Problems) == 0:
		r.Notes = append(r.Notes, fmt.Sprintf("the write-ahead log is ignored: %s", wal.badHeader))
	case wal.damaged > 0 && wal.lost == 0:
		r.Notes = append(r.Notes, fmt.Sprintf("frames from %d on in the write-ahead log fail their checksum and are ignored: the transaction a process was writing when it stopped (nothing committed is lost, unless the machine lost power)", wal.damaged))
	}
	if len(r.Problems) > 0 {
		return r, nil // SQLite would read through the damage Open refuses
	}
	q := url.Values{"mode": {"ro"}, "_pragma": {"busy_timeout(5000)"}}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: check %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&r.Pages); err != nil {
		var se *sqlite.Error
		if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOTADB {
			// No header of ours matched and no log lies beside it.
			return nil, fmt.Errorf("sqlite: %s is not a SQLite database: %w", path, err)
		}
		r.Problems = append(r.Problems, fmt.Sprintf("SQLite cannot read it: %v", err))
		return r, nil
	}
	rows, err := db.QueryContext(ctx, fmt.Sprintf("PRAGMA integrity_check(%d)", maxIntegrityLines))
	if err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("integrity_check: %v", err))
		return r, nil
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		if line != "ok" {
			r.Problems = append(r.Problems, "integrity_check: "+line)
		}
	}
	if err := rows.Err(); err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("integrity_check: %v", err))
	}
	if len(r.Problems) > 0 {
		return r, nil
	}
	if err := checkRecords(ctx, db, r); err != nil {
		return nil, fmt.Errorf("sqlite: check %s: %w", path, err)
	}
	return r, nil
}

// checkRecords decodes every journal record (each event, and the last
// record of each step), as a read of its run would, and adds a problem for each that does not decode
// (up to maxIntegrityLines). A record a newer rein wrote is no damage.
func checkRecords(ctx context.Context, db *sql.DB, r *Report) error {
	problem := func(err error, format string, args ...any) {
		if ve := (*journal.VersionError)(nil); errors.As(err, &ve) && ve.Newer() {
			return
		}
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...)+": "+err.Error())
	}
	rows, err := db.QueryContext(ctx, `SELECT r.id, j.seq, j.version, j.kind, j.step_id, j.status, j.attempt, j.at, j.payload
		FROM journal j JOIN runs r ON r.rk = j.rk
		WHERE j.kind IS NOT NULL ORDER BY j.id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() && len(r.Problems) < maxIntegrityLines {
		var (
			runID                string
			seq, version         int64
			kind, stepID, status sql.NullString
			attempt, at          sql.NullInt64
			payload              sql.RawBytes
		)
		if err := rows.Scan(&runID, &seq, &version, &kind, &stepID, &status, &attempt, &at, &payload); err != nil {
			return err
		}
		if _, err := readEvent(runID, seq, version, kind.String, stepID.String, status.String, attempt, at, payload); err != nil {
			problem(err, "event %d of run %s", seq, runID)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	// a step's last record is the one a read decodes.
	steps, err := db.QueryContext(ctx, `SELECT r.id, j.step_id, j.version, j.record FROM journal j JOIN runs r ON r.rk = j.rk
		WHERE j.id IN (SELECT max(id) FROM journal WHERE record IS NOT NULL GROUP BY rk, step_id) ORDER BY j.id`)
	if err != nil {
		return err
	}
	defer steps.Close()
	for steps.Next() && len(r.Problems) < maxIntegrityLines {
		var (
			runID   string
			version int64
			sf      journal.StoredStep
		)
		if err := steps.Scan(&runID, &sf.StepID, &version, &sf.Rec); err != nil {
			return err
		}
		sf.Version = uint64(max(version, 0))
		if _, _, err := journal.DecodeStep(runID, &sf); err != nil {
			problem(err, "step %s of run %s", sf.StepID, runID)
		}
	}
	return steps.Err()
}
