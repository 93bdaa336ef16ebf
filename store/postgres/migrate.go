package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered file of migrations/ (NNNN_name.sql).
type migration struct {
	version int
	name    string
	sql     string
}

// goMigrations are the parts of migrations written in Go, run after the
// migration's script in its transaction.
var goMigrations = map[int]func(context.Context, *sql.Tx) error{
	5: convertJournal, // 0005_journal_rows.sql
}

// migrations returns the embedded migrations in order. They must be
// numbered 1, 2, 3, … without gaps.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres store: migration %s: name must start with its number (0001_name.sql)", n)
		}
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("postgres store: migration %s: expected number %d", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the schema version this binary writes: the number of
// its last migration.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate brings the schema up to date in one transaction, holding an
// advisory lock per schema so that concurrent Opens apply each migration
// once. A database at a newer version than this binary knows is refused.
// upTo > 0 stops after that migration (the tests of a migration's
// conversion use it to write the schema before it).
func migrate(ctx context.Context, db *sql.DB, schema string, upTo int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	known := ms[len(ms)-1].version
	if upTo > 0 && upTo < known {
		ms = ms[:upTo]
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("postgres store: begin the migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := migrateTx(ctx, tx, ms, known, schema); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("postgres store: commit the migration: %w", err)
	}
	return nil
}

// migrateTx is migrate's transaction: ms are the migrations to apply,
// known the newest this binary knows.
func migrateTx(ctx context.Context, tx *sql.Tx, ms []migration, known int, schema string) error {
	where := schema
	if where == "" {
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&where); err != nil {
			return fmt.Errorf("postgres store: read current schema: %w", err)
		}
		if where == "" {
			return fmt.Errorf("postgres store: no schema to create tables in (the search_path names none that exists); set Options.Schema or search_path in the DSN")
		}
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('rein.migrate'), hashtext($1))`, where); err != nil {
		return fmt.Errorf("postgres store: lock schema %q for migration: %w", where, err)
	}
	if schema != "" {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			return fmt.Errorf("postgres store: look up schema %q: %w", schema, err)
		}
		if !exists {
			if _, err := tx.ExecContext(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
				return fmt.Errorf("postgres store: create schema %q: %w", schema, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS rein_schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres store: create rein_schema_migrations in %q: %w", where, err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM rein_schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("postgres store: read schema version in %q: %w", where, err)
	}
	if current > known {
		return fmt.Errorf("postgres store: schema %q was written by a newer rein (schema %d, this binary knows %d): upgrade rein", where, current, known)
	}
	for _, m := range ms[min(current, len(ms)):] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("postgres store: migration %s in schema %q: %w", m.name, where, err)
		}
		if convert := goMigrations[m.version]; convert != nil {
			if err := convert(ctx, tx); err != nil {
				return fmt.Errorf("postgres store: migration %s in schema %q: %w", m.name, where, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO rein_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return fmt.Errorf("postgres store: record migration %s: %w", m.name, err)
		}
	}
	return nil
}
