package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
)

func newResourcesCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resources",
		Short: "List and clear the resources remediations marked invalid, which later runs are flagged for",
		Long: `Work with the registry of invalidated resources of a run store (--db,
default $REIN_DB, else ` + defaultDB + `): each resource a remediation froze (a call
that could not be taken back wrote or sent it; rein runs remediate), with
the run, call and premise that invalidated it. A later run that reads one
is flagged (its call record names it: rein runs show), and a write,
external or destructive call that touches one waits for a person (the
default rule invalidated-resource), until a person clears it here once it
is put right. Rows belong to a tenant (--tenant; none: the runs started
without one). Every subcommand takes --db and -o/--output text|json.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				_ = cmd.Help()
				return &exitError{code: exitUsage}
			}
			return usageErr("unknown command %q for rein resources; see rein resources --help", args[0])
		},
	}
	cmd.AddCommand(newResourcesListCmd(s), newResourcesClearCmd(s))
	return cmd
}

func newResourcesListCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var tenant string
	var limit int
	cmd := &cobra.Command{
		Use:   "list [RESOURCE...]",
		Short: "List the invalidated resources (all of the tenant, or those named), oldest first",
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usageErr("--limit must be positive, not %d", limit)
			}
			if len(args) > store.MaxInvalidatedLookup {
				return usageErr("at most %d resources at once, not %d", store.MaxInvalidatedLookup, len(args))
			}
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				rows, err := c.Store().Invalidated(ctx, &store.InvalidatedParams{Tenant: tenant, Resources: args, Limit: limit})
				if err != nil {
					return failed("%s: %w", redactDSN(dsn), err)
				}
				if f.output == "json" {
					return encodeJSON(s, orEmpty(rows))
				}
				if len(rows) == 0 {
					fmt.Fprintf(s.err, "rein: no invalidated resources in %s\n", redactDSN(dsn))
					return nil
				}
				tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "RESOURCE\tRUN\tCALL\tPREMISE\tAT")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(r.Resource), r.RunID, printable(r.CallKey), printable(r.Premise), stamp(r.At))
				}
				return tw.Flush()
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant whose resources to list (none: the runs started without one)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many rows (0: all)")
	return cmd
}

func newResourcesClearCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	var tenant, runID string
	cmd := &cobra.Command{
		Use:   "clear RESOURCE",
		Short: "Clear an invalidated resource once a person put it right: later runs touch it unflagged",
		Long: `Clear RESOURCE from the registry of invalidated resources (every run's
invalidation of it, or only run --run's): later runs read and write it
without being flagged or held. Clearing a resource that is not invalid
is not an error (0 cleared). Runs already waiting for a person's approval
because of it keep waiting: approve or reject them (rein runs approve).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withStore(cmd, s, nil, func(ctx context.Context, c *rein.Client, dsn string) error {
				n, err := c.Store().ClearInvalidated(ctx, &store.ClearInvalidatedParams{Tenant: tenant, Resource: args[0], RunID: runID})
				if err != nil {
					return failed("%s: %w", redactDSN(dsn), err)
				}
				if f.output == "json" {
					return encodeJSON(s, map[string]any{"resource": args[0], "cleared": n})
				}
				fmt.Fprintf(s.out, "cleared %s: %d invalidation(s)\n", printable(args[0]), n)
				return nil
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant whose resource to clear (none: the runs started without one)")
	cmd.Flags().StringVar(&runID, "run", "", "clear only the invalidation this run made")
	return cmd
}

// writeInvalidated prints the calls that touched invalidated resources,
// each resource with what invalidated it and how to clear it.
func writeInvalidated(w io.Writer, calls []runs.InvalidatedCall) {
	if len(calls) == 0 {
		return
	}
	fmt.Fprintln(w, "invalidated resources touched:")
	for _, c := range calls {
		held := ""
		if c.Outcome == "awaiting_approval" {
			held = ", held for a person"
		}
		fmt.Fprintf(w, "  call %s (tool %s%s)\n", printable(c.Key), c.Tool, held)
		for _, u := range c.Resources {
			when := ""
			if u.After {
				when = " (named by its output, found after the call)"
			}
			fmt.Fprintf(w, "    %s%s: invalidated by run %s (call %s, premise %s); rein resources clear %s once it is put right\n",
				printable(u.Resource), when, u.RunID, printable(u.CallKey), printable(u.Premise), printable(u.Resource))
		}
	}
}
