package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

var finalStatuses = []trace.RunStatus{trace.RunSucceeded, trace.RunFailed, trace.RunCancelled}

func newRunsPruneCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var olderThan, status string
	var dryRun, yes, vacuum bool
	cmd := &cobra.Command{
		Use:   "prune [--older-than DURATION] [--status S] [--vacuum]",
		Short: "Delete finished runs settled before a time, with their unreferenced blobs (--dry-run lists them)",
		Long: `Delete finished runs (succeeded, failed, cancelled) that settled more than
DURATION ago (30d, 12h, 90m; without --older-than: every finished run), with
their events, steps, approvals and the blobs no other run refers to. A run
whose flow sets a longer retention: is kept.

--dry-run lists the runs that would be deleted and deletes nothing. A prune
that would delete every finished run (no --older-than and no --status) or
leave the store empty asks for confirmation on a terminal, and otherwise
needs --yes.

--vacuum then gives the freed space back to the file system: SQLite rewrites
the database file (VACUUM), which takes time in proportion to its size.
PostgreSQL reuses the space on its own and ignores it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			p := &store.PruneParams{Before: now}
			if olderThan != "" {
				d, err := flow.ParseDuration(olderThan)
				if err != nil || d < 0 {
					return usageErr("--older-than %q is not a duration like 30d, 12h or 90m", olderThan)
				}
				p.Before = now.Add(-d)
			}
			var err error
			if p.Status, err = parseStatus(status, finalStatuses); err != nil {
				return err
			}
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				p.DryRun = true
				sel, err := c.Prune(ctx, p)
				if err != nil {
					return failed("%s (dry run): %w", redactDSN(dsn), err)
				}
				if dryRun {
					return writePruneDryRun(ctx, s, c.Store(), sel, f.output)
				}
				if sel.Runs > 0 && !yes {
					every := olderThan == "" && status == ""
					if !every {
						if every, err = c.EmptiesStore(ctx, sel); err != nil {
							return failed("prune %s: %w", redactDSN(dsn), err)
						}
					}
					if every {
						if err := confirmPrune(s, sel.Runs, dsn); err != nil {
							return err
						}
					}
				}
				p.DryRun, p.Vacuum = false, vacuum
				res, err := c.Prune(ctx, p)
				if err != nil {
					return failed("%s: %w", redactDSN(dsn), err)
				}
				if f.output == "json" {
					return encodeJSON(s, res)
				}
				fmt.Fprintf(s.out, "pruned %d %s and %d %s\n", res.Runs, pluralize(res.Runs, "run", "runs"), res.Blobs, pluralize(res.Blobs, "blob", "blobs"))
				if vacuum && res.Reclaimed > 0 {
					fmt.Fprintf(s.out, "gave %.1f MB back to the file system\n", float64(res.Reclaimed)/1e6)
				}
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&olderThan, "older-than", "", "delete runs settled longer ago than this (30d, 12h, 90m; default: every finished run)")
	cmd.Flags().StringVar(&status, "status", "", "only runs with this final status (succeeded, failed, cancelled)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the runs that would be deleted; delete nothing")
	cmd.Flags().BoolVar(&vacuum, "vacuum", false, "then give the freed space back to the file system (SQLite: VACUUM)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking, even when the prune deletes every run")
	_ = cmd.RegisterFlagCompletionFunc("status", fixedValues(statusNames(finalStatuses)...))
	return cmd
}

// confirmPrune asks on a terminal whether to delete every run; elsewhere it
// refuses without --yes.
func confirmPrune(s *streams, n int, dsn string) error {
	what := fmt.Sprintf("%d %s, every finished run of %s", n, pluralize(n, "run", "runs"), redactDSN(dsn))
	in, ok := s.in.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return usageErr("this prune deletes %s: pass --yes to confirm (rein runs prune --dry-run lists them); nothing was deleted", what)
	}
	fmt.Fprintf(s.err, "Delete %s? [y/N] ", what)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return &exitError{code: exitRunFailed, err: fmt.Errorf("not confirmed; nothing was deleted")}
}

// pruneDryRunJSON is what prune --dry-run --output json prints.
type pruneDryRunJSON struct {
	DryRun bool        `json:"dry_run"`
	Runs   []*runs.Row `json:"runs"`
}

func writePruneDryRun(ctx context.Context, s *streams, db store.Store, sel *store.PruneResult, format string) error {
	rows := make([]*runs.Row, 0, len(sel.RunIDs))
	for _, id := range sel.RunIDs {
		r, err := db.GetRun(ctx, id)
		if err != nil {
			continue // pruned or changed since the selection
		}
		rows = append(rows, runs.NewRow(r))
	}
	if format == "json" {
		return encodeJSON(s, pruneDryRunJSON{DryRun: true, Runs: rows})
	}
	fmt.Fprintf(s.out, "would prune %d %s (dry run: nothing deleted)\n", len(rows), pluralize(len(rows), "run", "runs"))
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFLOW\tSTATUS\tSETTLED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Flow, r.Status, stamp(r.SettledAt))
	}
	return tw.Flush()
}
