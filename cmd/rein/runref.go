package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
)

// resolveRun finds the run a RUN argument names (a full ID, a unique
// prefix, or "last"; rein.Runs.Get). A ref that names no run, or more
// than one, is bad usage (exit 2); any other failure exits 1.
func resolveRun(ctx context.Context, s *streams, c *rein.Client, dsn, ref string) (*store.Run, error) {
	run, err := c.Runs().Get(ctx, ref)
	if err != nil {
		return nil, runsError(s, dsn, ref, err)
	}
	return run, nil
}

// runsError turns an error of rein.Runs into the CLI's exit code and
// advice, by its hint: a run that is not there, a decision that cannot be
// taken or a flow that does not load is bad usage (2), a run another
// process holds is 4, a run that needs Go tools the CLI does not have is
// 2 with where to resume it, a run whose model's API key is not set is 2
// with the variable to set and the command to continue, a run sealed with
// an encryption key rein.yaml does not name is 2 with the key, anything
// else 1.
func runsError(s *streams, dsn, ref string, err error) error {
	h := fault.HintOf(err)
	switch h.Code {
	case fault.HintNoRun:
		if ref == runs.Last {
			return usageErrFrom(err, "there is no last run: %s holds no runs yet", redactDSN(dsn))
		}
		return usageErrFrom(err, "run %s is not in %s (list the runs there with: rein runs list --db %s)", ref, redactDSN(dsn), shellQuote(redactDSN(dsn)))
	case fault.HintAmbiguousRun, fault.HintRunFinished, fault.HintAlreadyDecided, fault.HintNothingToDecide:
		return usageErrFrom(err, "%v", err)
	case fault.HintHeldByAnotherProcess:
		return &exitError{code: exitConflict, err: err}
	case fault.HintNeedsTools:
		return usageErrFrom(err, "%s; nothing was done here", needsToolsAdvice(h.RunID, h.Tools))
	case fault.HintNeedsAPIKey:
		return usageErrFrom(err, "%v; once %s is set, continue with: rein runs resume %s", err, strings.Join(h.Env, " and "), h.RunID)
	case fault.HintNeedsKey:
		return usageErrFrom(err, "%v; once rein.yaml encryption: names key %s, continue with: rein runs resume %s", err, h.KeyID, h.RunID)
	case fault.HintFlowDoesNotLoad:
		return loadError(s, err)
	}
	if errors.Is(err, store.ErrNotFound) {
		return usageErrFrom(err, "%v", err)
	}
	return &exitError{code: exitRunFailed, err: err}
}

// needsToolsAdvice says where a run started with Go tools goes on: only a
// program that registers them can resume it, never this CLI.
func needsToolsAdvice(runID string, tools []string) string {
	return fmt.Sprintf("run %s was started by a program with its own Go tools (%s), which the rein CLI does not have: that program resumes it "+
		"(rein.NewRuns with RunsOptions.Load.Tools, or a rein.Work worker with WorkerOptions.Load.Tools)", runID, strings.Join(tools, ", "))
}
