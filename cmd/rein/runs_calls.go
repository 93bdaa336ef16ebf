package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reinhq/rein/runs"
	"github.com/reinhq/rein/store"
)

// writeCalls prints a run's call records (the calls of its for_each items
// and plan steps), in the order they were first committed.
func writeCalls(w io.Writer, calls []*store.Call) {
	if len(calls) == 0 {
		return
	}
	fmt.Fprintln(w, "calls:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range calls {
		detail := ""
		switch {
		case c.Error != "":
			detail = fmt.Sprintf("error (%s): %s", c.ErrorClass, runs.Clip(c.Error, 100))
		case len(c.Output) > 0:
			detail = "output: " + preview(c.Output, 80)
		}
		took := "-"
		if c.Status.Settled() {
			took = c.Duration.Round(time.Millisecond).String()
		}
		status := string(c.Status)
		if c.Reconciled != "" {
			// settled after a crash by its tool's check, not by a person.
			status += " (reconciled by " + c.Reconciled + ")"
		}
		fmt.Fprintf(tw, "  %s\tattempt=%d\t%s %s\t%s\t%s\t%s\n", callPlace(c), c.Attempt, c.Kind, c.Name, status, took, detail)
	}
	_ = tw.Flush()
}

// callPlace names where in its step a call was made: step[item]#round,
// then /fallback, then the plan (plan n, or plan n/plan-step).
func callPlace(c *store.Call) string {
	var b strings.Builder
	b.WriteString(c.StepID)
	if c.Item >= 0 {
		b.WriteString("[" + strconv.Itoa(c.Item) + "]")
	}
	if c.Round > 0 {
		b.WriteString("#" + strconv.Itoa(c.Round))
	}
	if c.Fallback {
		b.WriteString("/fallback")
	}
	if c.Plan > 0 {
		b.WriteString(" plan " + strconv.Itoa(c.Plan))
		if c.PlanStep != "" {
			b.WriteString("/" + c.PlanStep)
		}
	}
	return b.String()
}
