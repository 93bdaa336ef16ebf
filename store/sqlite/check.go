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
	"github.com/reinhq/rein/store/internal/frames"
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

// checkRecords decodes every journal record, as a read of its run would,
// and adds a problem for each that does not decode (up to
// maxIntegrityLines). A record a newer rein wrote is no damage.
func checkRecords(ctx context.Context, db *sql.DB, r *Report) error {
	rows, err := db.QueryContext(ctx, `SELECT r.id, j.seq, j.events, j.steps FROM journal j JOIN runs r ON r.rk = j.rk ORDER BY j.id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var buf []byte
	for rows.Next() && len(r.Problems) < maxIntegrityLines {
		var (
			runID         string
			seq           int64
			events, steps []byte
		)
		if err := rows.Scan(&runID, &seq, &events, &steps); err != nil {
			return err
		}
		if err := decodeRow(runID, events, steps, &buf); err != nil {
			if ve := (*journal.VersionError)(nil); errors.As(err, &ve) && ve.Newer() {
				continue
			}
			r.Problems = append(r.Problems, fmt.Sprintf("journal row of run %s (after seq %d): %v", runID, seq, err))
		}
	}
	return rows.Err()
}

// decodeRow decodes one journal row's events and step records.
func decodeRow(runID string, events, steps []byte, buf *[]byte) error {
	if isPacked(events) {
		var err error
		if events, steps, *buf, err = unpack(runID, events, *buf); err != nil {
			return err
		}
	}
	if _, err := frames.DecodeEvents(nil, runID, events, -1, -1); err != nil {
		return err
	}
	var fold frames.Fold
	if err := fold.Add(runID, steps); err != nil {
		return err
	}
	for i := range fold.Last {
		if _, _, err := journal.DecodeStep(runID, &fold.Last[i]); err != nil {
			return err
		}
	}
	return nil
}
