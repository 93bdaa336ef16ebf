package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/reinhq/rein/runs"
)

// writeFailures prints a run's (or a step's) failed attempts, each with its
// error's cause chain, one link a line, indented by depth; a link's
// detail (a tool's stderr tail, a provider's error body) follows it, each
// of its lines quoted with "| ".
func writeFailures(w io.Writer, fs []runs.Failure) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintln(w, "failed attempts:")
	for _, f := range fs {
		fmt.Fprintf(w, "  %s attempt=%d (%s): %s\n", f.StepID, f.Attempt, f.Class, runs.Clip(f.Error, 200))
		for _, c := range f.Chain {
			pad := strings.Repeat("  ", 2+c.Depth)
			line := c.Type
			if c.Class != "" {
				line += " [" + c.Class + "]"
			}
			if c.Message != "" {
				line += " " + c.Message
			}
			fmt.Fprintf(w, "%s- %s\n", pad, line)
			if c.Detail != "" {
				fmt.Fprintf(w, "%s  %s:\n", pad, c.DetailKind)
				for l := range strings.SplitSeq(strings.TrimRight(c.Detail, "\n"), "\n") {
					fmt.Fprintf(w, "%s  | %s\n", pad, l)
				}
			}
		}
	}
}
