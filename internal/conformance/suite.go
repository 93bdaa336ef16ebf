package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/engine"
)

// Observed is a run as a backend shows it after an operation returned.
type Observed struct {
	// Status is the run's: succeeded, failed, waiting, cancelled.
	Status string `json:"status"`
	// Class is the class of the run's error, if it has one.
	Class string `json:"class,omitempty"`
	// Steps are the steps' statuses; a step left out is pending.
	Steps map[string]string `json:"steps"`
	// Pending are the steps (or agent calls, step/ref) that wait for a
	// person, sorted.
	Pending []string `json:"pending,omitempty"`
	// Usage is what the run spent against its budgets, as the backend
	// reports it (rein run --output json's usage).
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is a run's spend: iterations (step executions, for_each items,
// repeat rounds), model calls and tokens, as every backend counts it.
type Usage = engine.Usage

// Runner runs the table's cases on one backend. Each method returns the
// run once it settled or waits for a person, as the backend's own status
// view shows it.
type Runner interface {
	// Start starts run id of the case's flow with its input.
	Start(ctx context.Context, c *Case, id string) (*Observed, error)
	// Decide sends d (approve, reject or settle d.Step) to run id.
	Decide(ctx context.Context, id string, d Decision) (*Observed, error)
	// StartKilled starts run id in a worker process of its own, kills
	// that process (SIGKILL) once inFlight holds, calls release (the
	// blocked tools may go on), and lets another worker take the run
	// over.
	StartKilled(ctx context.Context, c *Case, id string, inFlight func() bool, release func()) (*Observed, error)
}

// Timeout bounds one case on any backend.
const Timeout = 2 * time.Minute

// AllEnv, set to 1, runs the cases of the skip lists too: to see which
// light up once a feature landed.
const AllEnv = "REIN_CONFORMANCE_ALL"

// Run runs every case of the table through r, but those of skip, which
// maps a case's name to why the backend cannot run it yet (unless AllEnv
// is 1). A name in skip that is no case fails, so the list cannot go
// stale.
func Run(t *testing.T, r Runner, skip map[string]string) {
	cases, err := Cases()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range cases {
		names[c.Name] = true
	}
	for name := range skip {
		if !names[name] {
			t.Errorf("skip list names %q, which is no case of %s", name, TestdataDir())
		}
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := skip[c.Name]; ok && os.Getenv(AllEnv) != "1" {
				t.Skip(why)
			}
			runCase(t, r, c)
		})
	}
}

func runCase(t *testing.T, r Runner, c *Case) {
	led := &Ledger{Path: filepath.Join(t.TempDir(), "ledger")}
	if err := os.WriteFile(led.Path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(LedgerEnv, led.Path)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	id := "conf-" + c.Name
	var (
		obs *Observed
		err error
	)
	if k := c.Want.Kill; k != nil {
		block := led.Path + ".block"
		if err := os.WriteFile(block, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		inFlight := func() bool { return led.AtLeast(k.InFlight) }
		obs, err = r.StartKilled(ctx, c, id, inFlight, func() { _ = os.Remove(block) })
		_ = os.Remove(block)
	} else {
		obs, err = r.Start(ctx, c, id)
	}
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	for i, d := range c.Want.Decisions {
		where := fmt.Sprintf("before decision %d (%s %s)", i+1, d.Action, d.Step)
		if obs.Status != "waiting" || !slices.Equal(obs.Pending, sorted(d.Pending)) {
			t.Fatalf("%s: run %s waiting on %v, want waiting on %v\n%s", where, obs.Status, obs.Pending, sorted(d.Pending), show(obs))
		}
		checkLedger(t, where, led, d.Ledger)
		if obs, err = r.Decide(ctx, id, d); err != nil {
			t.Fatalf("decision %d (%s %s): %v", i+1, d.Action, d.Step, err)
		}
	}
	w := c.Want
	if obs.Status != w.Status || obs.Class != w.Class {
		t.Errorf("run %s (class %q), want %s (class %q)\n%s", obs.Status, obs.Class, w.Status, w.Class, show(obs))
	}
	for _, id := range sorted(slices.Collect(maps.Keys(union(w.Steps, obs.Steps)))) {
		got, want := statusOf(obs.Steps, id), statusOf(w.Steps, id)
		if got != want {
			t.Errorf("step %s: %s, want %s", id, got, want)
		}
	}
	checkLedger(t, "at the end", led, w.Ledger)
	if w.Usage != nil && (obs.Usage == nil || *obs.Usage != *w.Usage) {
		t.Errorf("usage %+v, want %+v", obs.Usage, *w.Usage)
	}
}

func checkLedger(t *testing.T, where string, led *Ledger, want map[string]int) {
	t.Helper()
	got := led.Counts()
	for _, name := range sorted(slices.Collect(maps.Keys(union(got, want)))) {
		if got[name] != want[name] {
			t.Errorf("%s: tool %s ran %d times, want %d (ledger: %s)", where, name, got[name], want[name], led.Lines())
		}
	}
}

func statusOf(m map[string]string, id string) string {
	if s, ok := m[id]; ok && s != "" {
		return s
	}
	return "pending"
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func sorted[S ~[]string](s S) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

func show(o *Observed) string {
	b, _ := json.MarshalIndent(o, "", "  ")
	return string(b)
}

// Ledger reads the ledger file the table's tools append to.
type Ledger struct {
	Path string
}

// Lines are the ledger's lines, "TOOL KEY", in the order they were
// written.
func (l *Ledger) Lines() []string {
	data, _ := os.ReadFile(l.Path)
	var out []string
	for _, ln := range strings.Split(string(data), "\n") {
		if ln != "" {
			out = append(out, ln)
		}
	}
	return out
}

// Counts are the executions of each tool.
func (l *Ledger) Counts() map[string]int {
	out := map[string]int{}
	for _, ln := range l.Lines() {
		name, _, _ := strings.Cut(ln, " ")
		out[name]++
	}
	return out
}

// AtLeast reports whether each tool of want ran at least that often.
func (l *Ledger) AtLeast(want map[string]int) bool {
	got := l.Counts()
	for name, n := range want {
		if got[name] < n {
			return false
		}
	}
	return true
}
