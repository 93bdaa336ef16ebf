package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
)

// defaultDB is where rein keeps runs when neither --db nor REIN_DB says
// otherwise.
var defaultDB = filepath.Join(".rein", "rein.db")

// dbFromEnv returns flagValue, else $REIN_DB, else defaultDB.
func dbFromEnv(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv("REIN_DB"); v != "" {
		return v
	}
	return defaultDB
}

// dbFlag is the --db flag of every command that reads or writes runs.
type dbFlag struct{ dsn string }

func (d *dbFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&d.dsn, "db", "", "run store: a SQLite file, :memory:, or a postgres:// URL (default: $REIN_DB, else "+defaultDB+")")
}

// registerOverrides adds rein run's model flags (--script, --model,
// --record, --replay) and --config to a command that resumes a run, which
// otherwise uses the files and model the run recorded: a run started from
// a cassette goes on from one, offline.
func (l *loadFlags) registerOverrides(cmd *cobra.Command) {
	cmd.Flags().StringVar(&l.script, "script", "", "scripted-model script to resume with, instead of the one the run recorded")
	cmd.Flags().StringVar(&l.config, "config", "", "rein.yaml to resume with, instead of the one the run recorded")
	cmd.Flags().StringVar(&l.model, "model", "", "answer every model name with this model on resume: a rein.yaml models: name or provider/model")
	cmd.Flags().StringVar(&l.record, "record", "", "write every model exchange of the resumed run to this cassette file")
	cmd.Flags().StringVar(&l.replay, "replay", "", "answer every model call of the resumed run from this cassette file; a request it does not hold fails")
	cmd.Flags().BoolVar(&l.trustedToolsOnly, "trusted-tools-only", false, trustedToolsUsage)
}

// open opens the store; a DSN that does not open is bad usage (exit 2),
// a damaged store exit 6.
func (d *dbFlag) open(ctx context.Context) (store.Store, string, error) {
	dsn := dbFromEnv(d.dsn)
	st, err := store.Open(ctx, dsn)
	if errors.Is(err, store.ErrDamaged) {
		return nil, dsn, &exitError{code: exitDamaged, err: fmt.Errorf("--db %s: %w (rein runs check --db %s lists what is wrong)", redactDSN(dsn), err, shellQuote(redactDSN(dsn)))}
	}
	if err != nil {
		return nil, dsn, usageErr("--db %s: %v", redactDSN(dsn), err)
	}
	return st, dsn, nil
}

// redactDSN hides the passwords of a DSN (every form) before it is printed.
func redactDSN(dsn string) string { return redact.DSN(dsn) }

// closeStore closes st, reporting a failure on stderr.
func closeStore(s *streams, st store.Store) {
	if err := st.Close(); err != nil {
		fmt.Fprintf(s.err, "rein: closing the run store: %v\n", err)
	}
}

// checkFormat validates an --output text|json flag.
func checkFormat(flag, v string) error {
	if v != "text" && v != "json" {
		return usageErr("%s must be text or json, not %q", flag, v)
	}
	return nil
}

// failed is a failure that exits 1: the command ran and the store or the
// engine did not do what it was asked.
func failed(format string, args ...any) error {
	return &exitError{code: exitRunFailed, err: fmt.Errorf(format, args...)}
}

// writePending lists what a waiting run waits on and how to go on.
// A run started with Go tools the CLI does not have (needsTools) is only
// decided here (--no-resume): the program that has them resumes it.
func writePending(w io.Writer, runID, dsn string, pending []*store.Approval, needsTools []string) {
	if len(pending) == 0 {
		return
	}
	fmt.Fprintf(w, "waiting for %d %s:\n", len(pending), pluralize(len(pending), "decision", "decisions"))
	for _, a := range pending {
		fmt.Fprintf(w, "  step %s (%s)", a.StepID, a.Kind)
		if a.Tool != "" && a.Kind == store.KindSubmission {
			fmt.Fprintf(w, " adapter %s", a.Tool)
		} else if a.Tool != "" {
			fmt.Fprintf(w, " tool %s", a.Tool)
		}
		if len(a.Args) > 0 {
			fmt.Fprintf(w, " args %s", runs.Clip(string(a.Args), 200))
		}
		fmt.Fprintln(w)
		if a.Message != "" {
			fmt.Fprintf(w, "    %s\n", a.Message)
		}
	}
	if dsn == ":memory:" {
		fmt.Fprintln(w, "the run store is :memory:, so this run is gone once rein exits: run it with --db FILE to decide later")
		return
	}
	db := ""
	if dsn != "" && dsn != defaultDB {
		db = " --db " + shellQuote(redactDSN(dsn))
	}
	if len(needsTools) > 0 {
		db += " --no-resume"
		fmt.Fprintf(w, "%s\ndecide here with one of:\n", needsToolsAdvice(runID, needsTools))
	} else {
		fmt.Fprintln(w, "go on with one of:")
	}
	for _, a := range pending {
		if a.Kind == store.KindSubmission {
			// an agent answers it; approving it is no output.
			action := "submit --data 'JSON'"
			if a.Tool != "" {
				action = "submit_from_source"
			}
			fmt.Fprintf(w, "  rein tool FLOW %s --task %s --step %s%s\n", action, runID, a.StepID, db)
			fmt.Fprintf(w, "  rein runs settle %s %s --value 'JSON'%s\n", runID, a.StepID, db)
			continue
		}
		fmt.Fprintf(w, "  rein runs approve %s %s%s\n", runID, a.StepID, db)
		fmt.Fprintf(w, "  rein runs reject %s %s%s\n", runID, a.StepID, db)
		fmt.Fprintf(w, "  rein runs settle %s %s --value 'JSON'%s\n", runID, a.StepID, db)
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// decidedBy is who decides from this terminal: by (--by) when set, else
// the OS user (os/user), else $USER, else "cli".
func decidedBy(by string) string {
	if by = strings.TrimSpace(by); by != "" {
		return by
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}

// preview cuts a JSON value to one short line for text output.
func preview(raw json.RawMessage, n int) string {
	if len(raw) == 0 {
		return ""
	}
	return runs.Clip(string(raw), n)
}

// encodeJSON writes v as indented JSON to s.out.
func encodeJSON(s *streams, v any) error {
	enc := json.NewEncoder(s.out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return failed("write result: %w", err)
	}
	return nil
}
