package engine_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine/sched"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestReplayCorpus feeds every committed journal of testdata/replay,
// written by earlier engines, to the scheduler's machine, and checks that
// it reaches the state the store's projections held when the journal was
// written: each step's status, attempt and output digest, the run's
// status and the approvals it waits on. A change that reads old journals
// differently fails here; add a case to replayCases (and run
// -update-replay) for a new step type or failure path.
func TestReplayCorpus(t *testing.T) {
	t.Parallel()
	journals, err := filepath.Glob(filepath.Join(replayDir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(journals) < len(replayCases()) {
		t.Fatalf("%d journals in %s, want one per case (%d): run go test ./engine -run TestWriteReplayCorpus -update-replay", len(journals), replayDir, len(replayCases()))
	}
	for _, path := range journals {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := filepath.Join(replayDir, name)
			src, err := os.ReadFile(base + ".flow.yaml")
			if err != nil {
				t.Fatal(err)
			}
			f, err := flow.Parse(src, base+".flow.yaml", &flow.Options{Models: func(string) bool { return true },
				// the graph is the flow's alone; any tool will do.
				Tools: func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true }})
			if err != nil {
				t.Fatalf("the pinned flow no longer parses: %v", err)
			}
			events := readJournal(t, path)
			var want replayState
			b, err := os.ReadFile(base + ".golden.json")
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			got, err := replayJournal(f, events)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got.Pending)
			gb, _ := json.MarshalIndent(got, "", "  ")
			wb, _ := json.MarshalIndent(want, "", "  ")
			if !bytes.Equal(gb, wb) {
				t.Errorf("replaying %s reaches\n%s\nthe store's projections held\n%s", path, gb, wb)
			}
		})
	}
}

// replayJournal feeds a stored journal to the exported machine (package
// sched) of f, as a workflow engine would, and returns the state it
// reaches. It checks too that a resume's view of the graph — the waits
// counted again from the statuses alone (Recount) — is the one the
// journal's settlements released.
func replayJournal(f *flow.Flow, events []*trace.Event) (replayState, error) {
	m := sched.New(f, "r")
	for _, ev := range events {
		if err := m.Apply(ev); err != nil {
			return replayState{}, err
		}
	}
	released := make([]int, len(f.Steps))
	for i := range f.Steps {
		released[i] = m.Waiting(i)
	}
	m.Recount()
	got := replayState{Run: m.Run(), Steps: map[string]replayStepState{}}
	for i, s := range f.Steps {
		if n := m.Waiting(i); n != released[i] && m.Status(i) == trace.StepPending {
			return replayState{}, fmt.Errorf("step %s waits on %d requires after the journal, %d when counted again", s.ID, released[i], n)
		}
		if st := m.Status(i); st != trace.StepPending {
			got.Steps[s.ID] = replayStepState{Status: st, Attempts: m.Attempts(i), OutputSHA: m.OutputSHA(i)}
		}
	}
	for _, p := range m.Pending() {
		got.Pending = append(got.Pending, p.ID+":"+string(p.Kind))
	}
	return got, nil
}

// readJournal reads a journal written by TestWriteReplayCorpus.
func readJournal(t *testing.T, path string) []*trace.Event {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var events []*trace.Event
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		ev := new(trace.Event)
		if err := json.Unmarshal(sc.Bytes(), ev); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}
