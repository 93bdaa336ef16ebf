package sqlite

import (
	"context"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL: the
// file keeps a map of its free pages, and PRAGMA incremental_vacuum hands
// them back to the file system.
const autoVacuumIncremental = 2

// convertBusyMillis bounds how long the one-time conversion of an older
// database waits for another process's lock before it gives up (and tries
// again at the next Open).
const convertBusyMillis = 200

// incrementalVacuum makes the database file give space back (Prune runs
// PRAGMA incremental_vacuum). A new database is created with
// auto_vacuum=INCREMENTAL; a database an older rein created is converted
// once, by a VACUUM that rewrites the file (it takes time in proportion to
// the file's size). When another process holds the database, the
// conversion waits for it no longer than convertBusyMillis and is left to
// a later Open. Runs on the write connection before the writer starts.
func (s *Store) incrementalVacuum(ctx context.Context) error {
	var mode, version int
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return s.openErr(err)
	}
	if mode == autoVacuumIncremental {
		return nil
	}
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return s.openErr(err)
	}
	if _, err := s.wdb.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return s.openErr(err)
	}
	if version == 0 {
		return nil // no table yet: the setting applies as migrate creates them
	}
	if _, err := s.wdb.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", convertBusyMillis)); err != nil {
		return s.openErr(err)
	}
	_, err := s.wdb.ExecContext(ctx, "VACUUM")
	if _, rerr := s.wdb.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", s.opts.BusyTimeout.Milliseconds())); rerr != nil {
		return s.openErr(rerr)
	}
	var se *sqlite.Error
	if errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_BUSY || se.Code()&0xff == sqlite3.SQLITE_LOCKED) {
		return nil // another process is busy with it; the next Open converts it
	}
	if err != nil {
		return s.openErr(fmt.Errorf("convert to auto_vacuum=INCREMENTAL: %w", err))
	}
	return nil
}
