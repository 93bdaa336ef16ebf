package main

import (
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/jsonl"
)

func newWorkerCmd(s *streams) *cobra.Command {
	var (
		db          dbFlag
		o           rein.WorkerOptions
		cfg         rein.Config
		tracePath   string
		concurrency int
		trusted     bool
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Advance the durable runs that are ready (enqueued with rein run --detach, or orphaned) until interrupted",
		Long: `Claim the runs of the store that are ready — pending runs recorded with
rein run --detach, and running runs whose process died and whose lease
expired — and advance each one with the flow it pinned, at most --concurrency
at a time. Several workers may share one store (PostgreSQL for several hosts);
a run is only advanced by the worker that holds its lease.

On SIGINT or SIGTERM the worker stops claiming, gives the runs in flight
--grace to finish, then stops the rest without recording anything more
(their last committed transition stands, their leases are released, another
worker resumes them at once) and exits: 0 after SIGTERM (a clean stop, as a
service manager asks for it), 130 after SIGINT. A log line per run goes to
stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if concurrency <= 0 {
				return usageErr("--concurrency must be at least 1, not %d", concurrency)
			}
			if o.Poll <= 0 || cfg.LeaseTTL <= 0 || o.Grace < 0 {
				return usageErr("--poll and --lease must be positive durations, --grace not negative")
			}
			o.Concurrency = concurrency
			cfg.Load = &project.LoadOptions{TrustedToolsOnly: trusted}
			ctx := cmd.Context()
			st, dsn, err := db.open(ctx)
			if err != nil {
				return err
			}
			defer closeStore(s, st)
			cfg.Store = st
			serveWorkflows(cfg.Load, st) // agents' workflow tools
			var mu sync.Mutex
			red := redact.Process().With(redact.Passwords(dsn)...)
			o.Logf = func(format string, args ...any) {
				line := red.String(redact.DSN(fmt.Sprintf(format, args...)))
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(s.err, "%s %s\n", time.Now().Format("15:04:05.000"), line)
			}
			if tracePath != "" {
				js, err := jsonl.Create(tracePath)
				if err != nil {
					return usageErr("--trace: %v", err)
				}
				defer func() {
					if err := js.Close(); err != nil {
						fmt.Fprintf(s.err, "rein: writing trace %s: %v\n", tracePath, err)
					}
				}()
				cfg.Sink = trace.Sink(js)
			}
			o.Logf("worker: advancing the ready runs of %s, %d at a time (Ctrl-C to stop)", redactDSN(dsn), o.Concurrency)
			cfg.Sink = s.withTelemetry(cfg.Sink)
			c, err := rein.Open(ctx, cfg)
			if err != nil {
				return &exitError{code: exitRunFailed, err: err}
			}
			if err := c.Work(ctx, &o); err != nil {
				return &exitError{code: exitRunFailed, err: err}
			}
			if ctx.Err() != nil {
				o.Logf("worker: stopped")
				if in := interruptOf(ctx); in != nil && in.sig == syscall.SIGTERM {
					return nil // asked to stop, and stopped cleanly
				}
				return &exitError{code: exitInterrupted}
			}
			return nil
		},
	}
	db.register(cmd)
	cmd.Flags().StringVar(&cfg.Owner, "owner", "", "name of this worker in run leases (default: host/pid/random)")
	cmd.Flags().IntVar(&concurrency, "concurrency", 4, "most runs advanced at once")
	cmd.Flags().DurationVar(&o.Poll, "poll", time.Second, "how often to look for ready runs when there were none")
	cmd.Flags().DurationVar(&cfg.LeaseTTL, "lease", rein.DefaultLeaseTTL, "lease of a claimed run without a heartbeat (heartbeats every third of it)")
	cmd.Flags().DurationVar(&o.Grace, "grace", 10*time.Second, "on SIGINT/SIGTERM, how long runs in flight may finish before they are abandoned")
	cmd.Flags().StringVar(&tracePath, "trace", "", "write the events of every run to this JSONL file")
	cmd.Flags().BoolVar(&trusted, "trusted-tools-only", false, trustedToolsUsage)
	return cmd
}
