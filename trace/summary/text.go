package summary

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// TopN is how many steps WriteText lists as slowest and as spending the
// most tokens.
const TopN = 10

// messageRunes is where WriteText cuts failure messages.
const messageRunes = 80

// WriteText writes a compact report for people, one block per run: the run's
// status, duration and tokens; the TopN slowest steps; the TopN steps that
// spent the most tokens; the steps that retried, with the classes of their
// failed attempts; and every failure with its origin (model, tool or engine).
// Columns are aligned. It returns the first write error.
func (s *Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := &printer{w: tw}
	if len(s.Runs) == 0 {
		p.line("no runs in trace")
	}
	for i := range s.Runs {
		if i > 0 {
			p.line("")
		}
		p.run(&s.Runs[i])
	}
	if p.err != nil {
		return p.err
	}
	return tw.Flush()
}

// printer writes lines and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *printer) run(r *Run) {
	p.line("run %s\tflow %s\tstatus %s\tduration %s", r.RunID, orDash(r.Flow), r.Status, dur(r.Duration))
	p.line("  tokens %d in / %d out in %d model calls", r.TokensIn, r.TokensOut, r.ModelCalls)
	if f := r.Failure; f != nil {
		p.line("  failed: %s", describe(f))
	}
	if skipped := stepIDs(r.Steps, func(s *Step) bool { return s.Status == "skipped" }); skipped != "" {
		p.line("  skipped: %s", skipped)
	}
	p.slowest(r.Steps)
	p.tokens(r.Steps)
	p.retried(r.Steps)
	p.failures(r)
}

func (p *printer) slowest(steps []Step) {
	ran := filter(steps, func(s *Step) bool { return s.Duration > 0 || s.Attempts > 0 })
	slices.SortStableFunc(ran, func(a, b *Step) int { return cmp.Compare(b.Duration, a.Duration) })
	p.line("")
	if len(ran) == 0 {
		p.line("slowest steps: none ran")
		return
	}
	p.line("slowest steps")
	p.line("  STEP\tTYPE\tSTATUS\tDURATION\tATTEMPTS")
	for _, s := range ran[:min(len(ran), TopN)] {
		p.line("  %s\t%s\t%s\t%s\t%d", s.StepID, orDash(s.Type), s.Status, dur(s.Duration), s.Attempts)
	}
	p.more(len(ran))
}

func (p *printer) tokens(steps []Step) {
	used := filter(steps, func(s *Step) bool { return s.TokensIn+s.TokensOut > 0 || s.ModelCalls > 0 })
	slices.SortStableFunc(used, func(a, b *Step) int {
		return cmp.Compare(b.TokensIn+b.TokensOut, a.TokensIn+a.TokensOut)
	})
	p.line("")
	if len(used) == 0 {
		p.line("most tokens: no model calls")
		return
	}
	p.line("most tokens")
	p.line("  STEP\tTOTAL\tIN\tOUT\tMODEL CALLS")
	for _, s := range used[:min(len(used), TopN)] {
		p.line("  %s\t%d\t%d\t%d\t%d", s.StepID, s.TokensIn+s.TokensOut, s.TokensIn, s.TokensOut, s.ModelCalls)
	}
	p.more(len(used))
}

func (p *printer) retried(steps []Step) {
	retried := filter(steps, func(s *Step) bool { return s.Retries > 0 || s.Corrections > 0 })
	p.line("")
	if len(retried) == 0 {
		p.line("retried: none")
		return
	}
	p.line("retried")
	p.line("  STEP\tRETRIES\tCORRECTIONS\tFAILED ATTEMPTS\tFINAL STATUS")
	for _, s := range retried {
		p.line("  %s\t%d\t%d\t%s\t%s", s.StepID, s.Retries, s.Corrections, orDash(strings.Join(s.FailedClasses(), ", ")), s.Status)
	}
}

func (p *printer) failures(r *Run) {
	type row struct {
		step string
		f    *Failure
	}
	var rows []row
	for i := range r.Steps {
		s := &r.Steps[i]
		for j := range s.Failures {
			rows = append(rows, row{s.StepID, &s.Failures[j]})
		}
		if len(s.Failures) == 0 && s.Failure != nil {
			rows = append(rows, row{s.StepID, s.Failure})
		}
	}
	if r.Failure != nil {
		rows = append(rows, row{"(run)", r.Failure})
	}
	p.line("")
	if len(rows) == 0 {
		p.line("failures: none")
		return
	}
	p.line("failures")
	p.line("  STEP\tATTEMPT\tORIGIN\tCLASS\tMESSAGE")
	for _, x := range rows {
		attempt := "-"
		if x.f.Attempt > 0 {
			attempt = fmt.Sprint(x.f.Attempt)
		}
		msg := x.f.Message
		if x.f.Budget != "" && !strings.Contains(msg, x.f.Budget) {
			msg = strings.TrimSpace("budget " + x.f.Budget + ": " + msg)
		}
		p.line("  %s\t%s\t%s\t%s\t%s", x.step, attempt, orDash(string(x.f.Origin)), orDash(x.f.Class), orDash(clip(msg)))
	}
}

func (p *printer) more(n int) {
	if n > TopN {
		p.line("  … and %d more", n-TopN)
	}
}

// describe renders a run failure on one line.
func describe(f *Failure) string {
	var b strings.Builder
	b.WriteString(orDash(f.Class))
	if f.Origin != "" {
		b.WriteString(" from " + string(f.Origin))
	}
	if f.Budget != "" && !strings.Contains(f.Message, f.Budget) {
		b.WriteString(" (budget " + f.Budget + ")")
	}
	if f.Message != "" {
		b.WriteString(": " + clip(f.Message))
	}
	return b.String()
}

func filter(steps []Step, keep func(*Step) bool) []*Step {
	var out []*Step
	for i := range steps {
		if keep(&steps[i]) {
			out = append(out, &steps[i])
		}
	}
	return out
}

func stepIDs(steps []Step, keep func(*Step) bool) string {
	var ids []string
	for _, s := range filter(steps, keep) {
		ids = append(ids, s.StepID)
	}
	return strings.Join(ids, ", ")
}

// clip keeps the first line of s, without tabs, cut to messageRunes.
func clip(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	s = strings.ReplaceAll(s, "\t", " ")
	if r := []rune(s); len(r) > messageRunes {
		s = string(r[:messageRunes-1]) + "…"
	}
	return s
}

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
