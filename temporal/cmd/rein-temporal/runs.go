package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/temporal"
)

// inspect runs rein runs show|list|cancel|effects|trace --temporal; handled is false for
// another runs command.
func inspect(ctx context.Context, action string, args []string, stdout, stderr io.Writer) (code int, handled bool, err error) {
	switch action {
	case "show":
		code, err = showRun(ctx, args, stdout, stderr)
	case "list":
		code, err = listRuns(ctx, args, stdout, stderr)
	case "cancel":
		code, err = cancelRun(ctx, args, stdout)
	case "effects":
		code, err = showEffects(ctx, args, stdout)
	case "trace":
		code, err = showTrace(ctx, args, stdout)
	default:
		return 0, false, nil
	}
	return code, true, err
}

// oneRun reads the command line of rein runs NAME RUN --temporal …: the
// run, -o, and a client of the server (a usage error when any is wrong).
func oneRun(name string, args []string) (cl client.Client, run, output string, err error) {
	r, err := runCommand(name, args)
	if err != nil {
		return nil, "", "", err
	}
	return r.cl, r.run, r.output, nil
}

// showRun prints a run's status, steps, its agent steps' transcripts (from
// its history), the approvals it waits on and what may be done next, as
// rein runs show does. A history that cannot be read is said on stderr;
// the rest is shown.
func showRun(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	r, err := runCommand("show", args)
	if err != nil {
		return exitUsage, err
	}
	defer r.cl.Close()
	v, err := temporal.ShowRun(ctx, r.cl, r.run)
	if err != nil {
		return exitFailed, fmt.Errorf("run %s: %w", r.run, err)
	}
	s, err := r.withSessions(ctx, v)
	if err != nil {
		fmt.Fprintf(stderr, "rein: %v (shown without them)\n", err)
		s = newShown(v)
	}
	if r.output == "json" {
		return exitOK, encodeJSON(stdout, s)
	}
	writeRunView(stdout, v, s.Sessions)
	return exitOK, nil
}

// writeRunView prints v, with the transcripts of ss, in rein runs show's
// shape.
func writeRunView(w io.Writer, v *temporal.RunView, ss []temporal.AgentSession) {
	fmt.Fprintf(w, "run %s\n", v.RunID)
	row := func(k, format string, args ...any) { fmt.Fprintf(w, "  %-10s %s\n", k, fmt.Sprintf(format, args...)) }
	row("flow", "%s", v.Flow)
	row("status", "%s", v.Status.Status)
	row("workflow", "%s", v.Workflow)
	row("started", "%s", stamp(v.Started))
	if !v.Closed.IsZero() {
		row("settled", "%s", stamp(v.Closed))
	}
	if e := v.Error; e != nil {
		if e.Step != "" {
			row("error", "(%s) step %s: %s", e.Class, e.Step, e.Message)
		} else {
			row("error", "(%s) %s", e.Class, e.Message)
		}
	}
	if len(v.Steps) > 0 {
		fmt.Fprintln(w, "steps:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, st := range v.Steps {
			detail := ""
			switch {
			case st.Error != "":
				detail = "error: " + runs.Clip(st.Error, 120)
			case len(v.Outputs[st.ID]) > 0:
				detail = "output: " + runs.Clip(string(v.Outputs[st.ID]), 100)
			}
			fmt.Fprintf(tw, "  %s\t%s\tattempts=%d\t%s\n", st.ID, st.Status, st.Attempts, detail)
		}
		_ = tw.Flush()
	}
	writeSessions(w, ss)
	if len(v.Pending) > 0 {
		fmt.Fprintln(w, "waits on:")
		for _, p := range v.Pending {
			fmt.Fprintf(w, "  step %s (%s)", p.Step, p.Kind)
			if p.Attempt > 0 {
				fmt.Fprintf(w, ", attempt %d", p.Attempt)
			}
			if p.Error != "" {
				fmt.Fprintf(w, ": %s", runs.Clip(p.Error, 120))
			}
			fmt.Fprintln(w)
		}
	}
	if len(v.NextActions) > 0 {
		fmt.Fprintln(w, "next:")
		for _, a := range v.NextActions {
			fmt.Fprintf(w, "  %s --temporal …", a.Command)
			if a.Why != "" {
				fmt.Fprintf(w, "  (%s)", a.Why)
			}
			fmt.Fprintln(w)
		}
	}
}

// listRuns prints the runs the visibility API finds, newest first.
func listRuns(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var o temporal.ListOptions
	var output string
	fs := flag.NewFlagSet("runs list", flag.ContinueOnError)
	c.add(fs)
	fs.StringVar(&o.Flow, "flow", "", "only runs of this flow (ReinFlow)")
	fs.StringVar(&o.Status, "status", "", "only runs with this status (ReinStatus: running, waiting, succeeded, failed, cancelled)")
	fs.StringVar(&o.Tenant, "tenant", "", "only runs for this tenant (ReinTenant)")
	fs.IntVar(&o.Limit, "limit", 100, "at most this many runs")
	fs.StringVar(&output, "o", "text", "text or json")
	fs.StringVar(&output, "output", "text", "the same as -o")
	pos, err := parse(fs, args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 0 {
		return exitUsage, usageErr("rein runs list --temporal takes no arguments, only flags")
	}
	if err := checkOutput(output); err != nil {
		return exitUsage, err
	}
	if o.Limit <= 0 {
		return exitUsage, usageErr(fmt.Sprintf("--limit must be positive, not %d", o.Limit))
	}
	if _, err := temporal.ListQuery(o); err != nil {
		return exitUsage, usageErr(err.Error())
	}
	cl, err := c.dial()
	if err != nil {
		return exitUsage, err
	}
	defer cl.Close()
	rows, err := temporal.ListRuns(ctx, cl, c.namespace, o)
	if err != nil {
		return exitFailed, err
	}
	if output == "json" {
		listed := make([]listedRun, len(rows))
		for i, r := range rows {
			listed[i] = listedRun{RunRow: r, ID: r.RunID, CreatedAt: r.Started}
		}
		return exitOK, encodeJSON(stdout, listed)
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "rein: no runs in namespace %s on %s match\n", c.namespace, c.hostport)
		return exitOK, nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tFLOW\tSTATUS\tSTARTED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.RunID, r.Flow, r.Status, stamp(r.Started))
	}
	return exitOK, tw.Flush()
}

// cancelRun cancels a run's workflow and waits until it closed.
func cancelRun(ctx context.Context, args []string, stdout io.Writer) (int, error) {
	cl, run, output, err := oneRun("cancel", args)
	if err != nil {
		return exitUsage, err
	}
	defer cl.Close()
	st, err := temporal.CancelRun(ctx, cl, run)
	if err != nil {
		return exitFailed, fmt.Errorf("run %s: %w", run, err)
	}
	if output == "json" {
		if err := encodeJSON(stdout, map[string]string{"run_id": st.RunID, "status": st.Status}); err != nil {
			return exitFailed, err
		}
	} else {
		fmt.Fprintf(stdout, "run %s %s\n", st.RunID, st.Status)
	}
	if st.Status != "cancelled" {
		return exitFailed, fmt.Errorf("run %s ended %s before the cancellation took effect", st.RunID, st.Status)
	}
	return exitOK, nil
}

func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return usageErr(fmt.Sprintf("-o %s: give text or json", o))
	}
	return nil
}

// listedRun is a row of rein runs list --output json: the run's row, and
// its id and start under a local list's names (id, created_at).
type listedRun struct {
	temporal.RunRow
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
