package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema change, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrationSteps are the parts of migrations that SQL cannot do, by
// migration number: each runs in the migration's transaction, after its
// script.
var migrationSteps = map[int]func(context.Context, *sql.Tx) error{
	6: convertJournal,
}

// migrations returns the embedded migrations in order; their numbers run
// 1, 2, 3, … without gaps.
func migrations() ([]migration, error) {
	paths, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, p := range paths {
		name := strings.TrimPrefix(p, "migrations/")
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("sqlite: migration %s: name must be NNNN_name.sql", name)
		}
		b, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("sqlite: migration %s: want number %d", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the newest schema this binary knows (PRAGMA user_version).
var SchemaVersion = func() int {
	ms, err := migrations()
	if err != nil {
		panic(err)
	}
	return len(ms)
}()

// migrate applies the migrations the database lacks, in one transaction,
// and refuses a database written by a newer rein.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return s.openErr(err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit: sql.ErrTxDone
	var have int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return s.openErr(err)
	}
	if have > len(ms) {
		return fmt.Errorf("sqlite: %s was written by a newer rein (schema %d, this binary knows %d): upgrade rein", s.path, have, len(ms))
	}
	if have == len(ms) {
		return nil
	}
	for _, m := range ms[have:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return s.openErr(fmt.Errorf("apply migration %s: %w", m.name, err))
		}
		if step := migrationSteps[m.version]; step != nil {
			if err := step(ctx, tx); err != nil {
				return s.openErr(fmt.Errorf("apply migration %s: %w", m.name, err))
			}
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(ms))); err != nil {
		return s.openErr(err)
	}
	if err := tx.Commit(); err != nil {
		return s.openErr(err)
	}
	return nil
}
