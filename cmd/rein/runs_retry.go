package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
)

func newRunsRetryCmd(s *streams) *cobra.Command {
	f := &storeFlags{}
	l := &loadFlags{}
	var from string
	cmd := &cobra.Command{
		Use:   "retry RUN [--from STEP]",
		Short: "Continue a failed run from its failed step, keeping what it did",
		Long: `Re-open a failed run and continue it: the same run id, every settled step and
every effect kept. The step that failed runs again at its next attempt (so a
tool that is not idempotent gets a new idempotency key); its failed attempts
stay in the journal (rein runs trace). With --from STEP, STEP and every step
that reads or requires it (transitively) run again too, and the other steps
keep their outputs: STEP must be the failed step or one that settled before
the failure. Only a failed run can be retried: a waiting run is decided
(rein runs approve|reject|settle), a pending one resumed (rein runs resume).
Exit codes as rein run; 2 when the run is not failed or STEP is not one it
can retry from.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := l.checkModelFlags(); err != nil {
				return err
			}
			return f.withStore(cmd, s, l.runsOptions(), func(ctx context.Context, c *rein.Client, dsn string) error {
				opts := &rein.RetryOptions{From: from, ResumeOptions: *watchProgress(s)}
				out, err := c.Retry(ctx, args[0], opts)
				if err != nil {
					switch {
					case fault.HintOf(err).Code == fault.HintNotFailed:
						return usageErrFrom(err, "%v", err)
					case fault.HintOf(err).Code == "" && (fault.ClassOf(err) == fault.NotFound || fault.ClassOf(err) == fault.Business):
						return usageErrFrom(err, "%v; nothing was done", err)
					}
					return runsError(s, dsn, args[0], err)
				}
				res, err := afterInterrupt(ctx, s, c.Store(), dsn, out.Result, false)
				if err != nil {
					return err
				}
				return writeRunResult(ctx, s, res, out.StepOrder, dsn, f.output, false)
			})
		},
	}
	f.register(cmd)
	l.registerOverrides(cmd)
	cmd.Flags().StringVar(&from, "from", "", "run again from this step: the failed one, or one that settled before it")
	return cmd
}
