package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
)

// vacuum rewrites the database without its free pages (VACUUM) on a
// connection of its own, outside the writer's transactions, and returns
// how many bytes the file gives back. SQLite writes the new content to
// the WAL; the file shrinks at the checkpoint that copies it back (the
// one SQLite runs when the last connection closes, at the latest).
// Another connection's write lock is waited for as Options.BusyTimeout
// says. A ":memory:" database has no file to shrink: nothing is done.
func (s *Store) vacuum(ctx context.Context) (int64, error) {
	if s.memory {
		return 0, nil
	}
	q := url.Values{"_pragma": {fmt.Sprintf("busy_timeout(%d)", s.opts.BusyTimeout.Milliseconds())}}
	if s.opts.Checkpoint == CheckpointExternal {
		q.Add("_pragma", "wal_autocheckpoint(0)")
	}
	db, err := sql.Open("sqlite", s.path+"?"+q.Encode())
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	size := func() (int64, error) {
		var pages, pageSize int64
		if err := db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
			return 0, err
		}
		err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize)
		return pages * pageSize, err
	}
	before, err := size()
	if err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
		return 0, err
	}
	after, err := size()
	if err != nil {
		return 0, err
	}
	// Best effort: copy the rewritten pages back now, which truncates the
	// file, unless a reader holds the WAL (then a later checkpoint does).
	// A WAL checkpointed by another program is left to it.
	if s.opts.Checkpoint != CheckpointExternal {
		_, _ = db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
	return max(before-after, 0), nil
}
