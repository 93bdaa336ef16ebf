package runs

import (
	"fmt"
	"io"
	"strings"

	"github.com/reinhq/rein/journal"
)

// The text of rein runs effects, shared by its local and Temporal forms:
// each backend writes a call's head line its way (the Temporal one adds
// the call's status), then the same details and remediations.

// WriteCallDetails writes the lines under call c's head: the resources it
// read, wrote and sent (and those that could not be rendered), its tags,
// where each of its arguments came from, and its compensation.
func WriteCallDetails(w io.Writer, c *EffectCall) {
	writeList(w, "  ", "reads", c.Reads)
	writeList(w, "  ", "writes", c.Writes)
	writeList(w, "  ", "sends", c.Sends)
	writeList(w, "  ", "unrendered", c.Unrendered)
	writeList(w, "  ", "tags", c.Tags)
	for _, p := range c.Provenance {
		ptr := p.Pointer
		if ptr == "" {
			ptr = "(the whole args)"
		}
		fmt.Fprintf(w, "  arg %s from %s\n", ptr, strings.Join(p.Origins, " + "))
	}
	if cp := c.Compensation; cp != nil {
		fmt.Fprintf(w, "  %s\n", CompensationLine(cp))
	}
}

// CompensationLine is how a call's compensation reads: its kind, tool
// and args, or why it cannot be made.
func CompensationLine(cp *journal.Compensation) string {
	if cp.Error != "" {
		return fmt.Sprintf("%s: %s (cannot be made: %s)", cp.Kind, cp.Tool, cp.Error)
	}
	return fmt.Sprintf("%s: %s %s", cp.Kind, cp.Tool, cp.Args)
}

// WriteRemediation writes remediation record m, indented under a
// "remediations:" line: what was done about which call, the call made,
// its risk tier, what it touched or made invalid, an escalation and its
// decision (by "someone" when the decision names nobody), its error.
func WriteRemediation(w io.Writer, m *journal.Remediation) {
	line := fmt.Sprintf("  %s %s %s: %s", m.Key, m.Action, m.Tool, m.Status)
	if m.Premise != "" {
		line += " (premise " + m.Premise + ")"
	}
	fmt.Fprintln(w, line)
	if m.Call != nil {
		fmt.Fprintf(w, "    called %s %s\n", m.Call.Tool, m.Call.Args)
	}
	if m.Tier > 0 {
		fmt.Fprintf(w, "    risk tier %d, let through by: %s\n", m.Tier, m.Control)
	}
	writeList(w, "    ", "touched", m.Touched)
	writeList(w, "    ", "invalid", m.Invalid)
	if m.Escalation != "" {
		fmt.Fprintf(w, "    escalated: a person decides (rein runs approve|reject|settle RUN %s)\n", m.Escalation)
	}
	if m.Decision != "" {
		by := m.DecidedBy
		if by == "" {
			by = "someone"
		}
		fmt.Fprintf(w, "    decided: %s %s (by %s)\n", m.Decision, m.Comment, by)
	}
	if m.Error != "" {
		fmt.Fprintf(w, "    error: %s\n", m.Error)
	}
}

func writeList(w io.Writer, indent, what string, items []string) {
	if len(items) > 0 {
		fmt.Fprintf(w, "%s%s: %s\n", indent, what, strings.Join(items, ", "))
	}
}
