package sqlite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/reinhq/rein/store"
)

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// recheck is how often, and how long apart, Open looks at the files again
// before it calls them damaged: a checkpoint of another process writes a
// growing database's first page (its size) before the pages past the old
// end of the file, so for a moment a sound file looks short.
const (
	rechecks     = 10
	recheckPause = 100 * time.Millisecond
)

// damage lists what is wrong with the database file at path and its
// write-ahead log, as far as their headers and frames tell, without
// SQLite: a file truncated or overwritten under a WAL (which would hide
// it, serving the pages it holds), and committed transactions that SQLite's
// recovery would drop because a frame before them fails its checksum, or
// because the log's own header is damaged.
// A missing or empty file without a WAL is a new database: no problem.
func damage(path string) ([]string, error) {
	wal, err := scanWAL(path + "-wal")
	if err != nil {
		return nil, fmt.Errorf("read %s-wal: %w", path, err)
	}
	var problems []string
	if wal.lost > 0 {
		problems = append(problems, fmt.Sprintf("frame %d of its write-ahead log fails its checksum, and %d committed transactions after it would be dropped (SQLite keeps the %d before it)",
			wal.damaged, wal.lost, wal.commits))
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if wal.commits > 0 {
			problems = append(problems, fmt.Sprintf("the database file is missing, but its write-ahead log holds %d transactions", wal.commits))
		}
		return problems, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	hdr := make([]byte, 101)
	n, err := io.ReadFull(f, hdr)
	switch {
	case size == 0:
		if wal.commits > 0 {
			problems = append(problems, fmt.Sprintf("the database file is empty, but its write-ahead log holds %d transactions: the file was truncated", wal.commits))
		}
		return problems, nil
	case err != nil && n < len(hdr):
		if wal.pageSize == 0 && string(hdr[:n]) != sqliteMagic[:min(n, 16)] {
			return problems, nil // a small file that is no database: SQLite says so (SQLITE_NOTADB)
		}
		return append(problems, fmt.Sprintf("the database file is %d bytes, shorter than a SQLite header", size)), nil
	case string(hdr[:16]) != sqliteMagic:
		switch {
		case wal.pageSize != 0:
			return append(problems, "the database file does not start with the SQLite header, but a write-ahead log lies beside it: the file was overwritten"), nil
		case size%512 == 0 && btreePage(hdr[100]):
			return append(problems, "the database file does not start with the SQLite header, but the rest of its first page is a SQLite page: the header was overwritten"), nil
		}
		return problems, nil // not a database at all: SQLite says so (SQLITE_NOTADB)
	}
	pageSize := int64(binary.BigEndian.Uint16(hdr[16:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return append(problems, fmt.Sprintf("the database header gives a page size of %d", pageSize)), nil
	}
	if wal.badHeader != "" {
		n, err := strandedCommits(path+"-wal", int(pageSize))
		if err != nil {
			return nil, fmt.Errorf("read %s-wal: %w", path, err)
		}
		if n > 0 {
			problems = append(problems, fmt.Sprintf("the header of its write-ahead log is damaged (%s), so SQLite would ignore the log and drop the %d committed transactions in it", wal.badHeader, n))
		}
	}
	if size%pageSize != 0 {
		problems = append(problems, fmt.Sprintf("the database file is %d bytes, not a whole number of %d-byte pages: it was truncated", size, pageSize))
	}
	pages := int64(binary.BigEndian.Uint32(hdr[28:]))
	sizeValid := binary.BigEndian.Uint32(hdr[24:]) == binary.BigEndian.Uint32(hdr[92:])
	if sizeValid && pages > 0 && size < pages*pageSize {
		problems = append(problems, fmt.Sprintf("the database file holds %d pages, its header says %d: it was truncated", size/pageSize, pages))
	}
	return problems, nil
}

// btreePage reports whether b is the first byte of a SQLite b-tree page
// header (the schema table's, on the first page after the file header).
func btreePage(b byte) bool { return b == 0x02 || b == 0x05 || b == 0x0a || b == 0x0d }

// checkFiles refuses a damaged database before SQLite opens it: an error
// wrapping store.ErrDamaged that lists the problems. A problem must be
// there at every look for rechecks × recheckPause (a checkpoint in
// another process may show one for a moment).
func (s *Store) checkFiles() error {
	var problems []string
	for i := 0; i < rechecks; i++ {
		var err error
		if problems, err = damage(s.path); err != nil {
			return s.openErr(err)
		}
		if len(problems) == 0 {
			return nil
		}
		time.Sleep(recheckPause)
	}
	return damagedErr(s.path, problems)
}

// damagedErr is the error for a database with problems.
func damagedErr(path string, problems []string) error {
	return fmt.Errorf("%w: sqlite: %s: %s; restore it from a backup", store.ErrDamaged, path, strings.Join(problems, "; "))
}
