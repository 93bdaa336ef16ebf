package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
)

func newRunsCheckCmd(s *streams) *cobra.Command {
	var db dbFlag
	var output string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the run store for damage, without changing it",
		Long: `Check a SQLite run store without changing it: the database file's header and
size against its pages, every frame of its write-ahead log (-wal) with
SQLite's checksums, SQLite's integrity_check over every page and index
(it reads the whole file, about 0.3 s per 100 MB), and every journal record
decoded.

Exit 0 when the store is sound, 6 when it is damaged (restore it from a
backup). A log tail that a stopped process left half-written is reported
as a note: SQLite ignores it, and nothing committed is lost. PostgreSQL
checks its own pages; there is nothing for rein to check.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat("--output", output); err != nil {
				return err
			}
			dsn := dbFromEnv(db.dsn)
			scheme, err := store.SchemeOf(dsn)
			if err != nil {
				return usageErr("--db %s: %v", redactDSN(dsn), err)
			}
			if scheme == store.SchemePostgres || dsn == ":memory:" {
				fmt.Fprintf(s.err, "rein: %s: nothing to check (PostgreSQL checks its own pages; :memory: keeps nothing)\n", redactDSN(dsn))
				return nil
			}
			path, _, err := sqlite.ParseDSN(dsn)
			if err != nil {
				return usageErr("--db %s: %v", redactDSN(dsn), err)
			}
			r, err := sqlite.Check(cmd.Context(), path)
			if err != nil {
				return usageErr("--db %s: %v", redactDSN(dsn), err)
			}
			if output == "json" {
				if err := encodeJSON(s, r); err != nil {
					return err
				}
			} else {
				writeCheck(s, r)
			}
			if !r.OK() {
				return &exitError{code: exitDamaged}
			}
			return nil
		},
	}
	db.register(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

func writeCheck(s *streams, r *sqlite.Report) {
	if r.OK() {
		fmt.Fprintf(s.out, "%s: ok (%d pages; write-ahead log: %d frames, %d transactions)\n", r.Path, r.Pages, r.WALFrames, r.WALCommits)
	} else {
		fmt.Fprintf(s.out, "%s: damaged; restore it from a backup\n", r.Path)
		for _, p := range r.Problems {
			fmt.Fprintf(s.out, "  problem: %s\n", p)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(s.out, "  note: %s\n", n)
	}
}
