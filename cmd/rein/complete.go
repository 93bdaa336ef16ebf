package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// Shell completion: cobra's `rein completion bash|zsh|fish|powershell`
// prints the script; the script calls the hidden `rein __complete` command,
// which answers from the functions registered here.

// outputFormats are the values of every -o/--output flag.
var outputFormats = []string{"text", "json"}

// addOutputFlag adds -o/--output text|json to cmd.
func addOutputFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVarP(v, "output", "o", "text", "result format: text or json")
}

// fixedValues completes a flag or argument from a closed set.
func fixedValues(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}

func statusNames(statuses []trace.RunStatus) []string {
	names := make([]string, len(statuses))
	for i, st := range statuses {
		names[i] = string(st)
	}
	return names
}

// registerCompletions completes -o/--output text|json on every command of
// the tree that has it and completes it no other way, and run IDs as the first argument of the commands that take
// RUN (with the pending steps of that run as the second of approve, reject
// and settle).
func registerCompletions(cmd *cobra.Command) {
	if f := cmd.Flags().Lookup("output"); f != nil && f.Shorthand == "o" {
		if _, own := cmd.GetFlagCompletionFunc("output"); !own {
			_ = cmd.RegisterFlagCompletionFunc("output", fixedValues(outputFormats...))
		}
	}
	if strings.Contains(cmd.Use, " RUN") && cmd.ValidArgsFunction == nil {
		cmd.ValidArgsFunction = completeRunArgs
	}
	for _, c := range cmd.Commands() {
		registerCompletions(c)
	}
}

// completeRunArgs completes RUN from the store that --db or $REIN_DB names
// (newest first, with flow and status as descriptions; approve, reject and
// settle offer waiting runs only), then STEP of approve, reject and settle
// from the run's pending approvals. A store that does not exist yet is not
// created: nothing is offered.
func completeRunArgs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const none = cobra.ShellCompDirectiveNoFileComp
	deciding := strings.Contains(cmd.Use, "RUN STEP")
	if len(args) > 1 || len(args) == 1 && !deciding {
		return nil, none
	}
	dsn, _ := cmd.Flags().GetString("db")
	dsn = dbFromEnv(dsn)
	if !storeExists(dsn) {
		return nil, none
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, none
	}
	defer db.Close()
	if len(args) == 1 {
		return completePendingSteps(ctx, db, args[0], toComplete), none
	}
	p := &store.ListRunsParams{IDPrefix: toComplete, Limit: 100}
	if deciding {
		p.Status = trace.RunWaiting
	}
	list, err := db.ListRuns(ctx, p)
	if err != nil {
		return nil, none
	}
	var out []cobra.Completion
	if strings.HasPrefix(runs.Last, toComplete) {
		out = append(out, cobra.CompletionWithDesc(runs.Last, "the newest run"))
	}
	for _, r := range list {
		if cmd.Name() == "cancel" && r.Finished() {
			continue
		}
		out = append(out, cobra.CompletionWithDesc(r.ID, fmt.Sprintf("%s %s %s", r.Flow, r.Status, stamp(r.CreatedAt))))
	}
	return out, none
}

// completePendingSteps lists the steps of run ref that wait for a decision.
func completePendingSteps(ctx context.Context, db store.Store, ref, toComplete string) []cobra.Completion {
	run, err := runs.Resolve(ctx, db, ref)
	if err != nil {
		return nil
	}
	pending, err := db.Approvals(ctx, &store.ListApprovalsParams{RunID: run.ID, Status: store.ApprovalPending})
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, a := range pending {
		if strings.HasPrefix(a.StepID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(a.StepID, string(a.Kind)))
		}
	}
	return out
}

// storeExists reports whether dsn names a store that completion may open:
// PostgreSQL, or a SQLite file that is there (opening one that is not
// would create it).
func storeExists(dsn string) bool {
	scheme, err := store.SchemeOf(dsn)
	switch {
	case err != nil, dsn == ":memory:":
		return false
	case scheme == store.SchemePostgres:
		return true
	}
	path, _, _ := strings.Cut(dsn, "?")
	path = strings.TrimPrefix(strings.TrimPrefix(path, "sqlite:"), "file:")
	_, err = os.Stat(path)
	return err == nil
}
