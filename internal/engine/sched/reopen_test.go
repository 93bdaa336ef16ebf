package sched

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/journal"
)

// TestReopens pins what a retry re-opens: the failed steps and those that
// waited, with from also from and what is downstream of it (not a
// sibling); and what it refuses: a blocked or unknown step, a from that
// never ran or does not exist.
func TestReopens(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, `name: r
steps:
  - {id: a, tool: t, args: {}}
  - {id: b, tool: t, args: {x: "{a}"}, requires: [a]}
  - {id: c, tool: t, args: {x: "{b}"}, requires: [b]}
  - {id: side, tool: t, args: {}, requires: []}
  - {id: d, tool: t, args: {x: "{c}"}, requires: [c]}
`)
	ok, failed, waiting := journal.StepSucceeded, journal.StepFailed, journal.StepWaiting
	status := func(st ...journal.StepStatus) func(int) (journal.StepStatus, bool) {
		return func(i int) (journal.StepStatus, bool) {
			if i >= len(st) || st[i] == "" {
				return "", false
			}
			return st[i], true
		}
	}
	for _, c := range []struct {
		name   string
		st     []journal.StepStatus
		from   string
		want   []int
		errHas string
		class  fault.Class
	}{
		{"the failed step", []journal.StepStatus{ok, failed, "", ok}, "", []int{1}, "", ""},
		{"a waiting step asks again", []journal.StepStatus{ok, failed, "", waiting}, "", []int{1, 3}, "", ""},
		{"from a settled step and downstream", []journal.StepStatus{ok, failed, "", ok}, "a", []int{0, 1}, "", ""},
		{"downstream, not the sibling", []journal.StepStatus{ok, ok, failed, ok}, "b", []int{1, 2}, "", ""},
		{"from never ran", []journal.StepStatus{ok, failed}, "c", nil, "never ran", fault.Business},
		{"no such from", []journal.StepStatus{ok, failed}, "zz", nil, "has no step", fault.NotFound},
		{"blocked", []journal.StepStatus{ok, journal.StepBlocked}, "", nil, "blocked by the policy gate", fault.Business},
		{"unknown", []journal.StepStatus{journal.StepUnknown, failed}, "", nil, "in doubt", fault.Business},
	} {
		got, err := Reopens(f, "run-1", c.from, status(c.st...))
		if c.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), c.errHas) || fault.ClassOf(err) != c.class {
				t.Errorf("%s: %v, want a %s error with %q", c.name, err, c.class, c.errHas)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
			continue
		}
		for k := range got {
			if got[k] != c.want[k] {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
}

// TestReopensTaken: a step whose effects the saga took back runs again
// with every settled step downstream of it; a sibling and a step that
// never ran stay as they are, and a frozen (not taken) step keeps its
// output.
func TestReopensTaken(t *testing.T) {
	t.Parallel()
	f := parseMachineFlow(t, `name: r
steps:
  - {id: a, tool: t, args: {}}
  - {id: b, tool: t, args: {x: "{a}"}, requires: [a]}
  - {id: side, tool: t, args: {}, requires: []}
  - {id: c, tool: t, args: {x: "{b}"}, requires: [b]}
  - {id: d, tool: t, args: {}, requires: []}
`)
	ok, failed := journal.StepSucceeded, journal.StepFailed
	st := []journal.StepStatus{ok, ok, ok, failed, ""}
	status := func(i int) (journal.StepStatus, bool) { return st[i], st[i] != "" }
	for _, c := range []struct {
		name  string
		taken []int
		want  []int
	}{
		{"nothing taken back", nil, []int{3}},
		{"a taken back: a, b downstream, the failed c", []int{0}, []int{0, 1, 3}},
		{"side taken back", []int{2}, []int{2, 3}},
		{"a step that never ran is not reopened", []int{4}, []int{3}},
	} {
		got, err := ReopensTaken(f, "run-1", "", status, func(i int) bool {
			for _, k := range c.taken {
				if k == i {
					return true
				}
			}
			return false
		})
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
			continue
		}
		for k := range got {
			if got[k] != c.want[k] {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
}
