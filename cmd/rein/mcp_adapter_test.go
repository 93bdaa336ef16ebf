package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// adapterFolder writes a flow folder whose source step's adapter, fetch,
// appends its idempotency key to ledger and answers {"rows": 1}, which
// breaks the step's output_schema (it wants "total"): a submission the
// step rejects, so the agent may call submit_from_source again.
func adapterFolder(t *testing.T, idempotent bool) (dir, ledger string) {
	t.Helper()
	dir = t.TempDir()
	ledger = filepath.Join(dir, "ledger")
	files := map[string]string{
		"rein.yaml": fmt.Sprintf(`adapters:
  fetch:
    command: ["sh", "-c", "cat > /dev/null; printf '%%s\n' \"$REIN_IDEMPOTENCY_KEY\" >> \"$0\"; echo '{\"rows\": 1}'", %q]
    effect: write
    idempotent: %v
`, ledger, idempotent),
		"flow.yaml": "name: src\ninputs: {type: object}\nsteps:\n  - id: s\n    adapter: fetch\n    skill: fetch-it\n    requires: []\n" +
			"    output_schema: {type: object, properties: {total: {type: number}}, required: [total]}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, ledger
}

// TestMCPRetriedSourceDoesNotRunAnAdapterAgain: a submit_from_source
// retried for the same step answers from the record of its adapter's call
// when the adapter is not idempotent (it ran once; the same key ran it
// ten times); an idempotent adapter is called again, with the same key.
func TestMCPRetriedSourceDoesNotRunAnAdapterAgain(t *testing.T) {
	t.Parallel()
	for _, idempotent := range []bool{false, true} {
		t.Run(fmt.Sprint("idempotent=", idempotent), func(t *testing.T) {
			t.Parallel()
			dir, ledger := adapterFolder(t, idempotent)
			m := serveMCP(t, filepath.Join(dir, "rein.db"), dir)
			text, isErr := m.call("src_workflow", map[string]any{"action": "start", "input": map[string]any{}})
			var task struct {
				TaskID string `json:"task_id"`
			}
			if err := json.Unmarshal([]byte(text), &task); isErr || err != nil || task.TaskID == "" {
				t.Fatalf("start: error %v, %s", isErr, text)
			}
			for try := 1; try <= 3; try++ {
				text, isErr := m.call("src_workflow", map[string]any{"action": "submit_from_source", "task_id": task.TaskID, "step_id": "s"})
				if !isErr || !strings.Contains(text, "missing property 'total'") {
					t.Fatalf("try %d: error %v, %s; want the output rejected: no total", try, isErr, text)
				}
			}
			m.stop()
			got := ledgerLines(t, ledger)
			want := 1
			if idempotent {
				want = 3
			}
			if len(got) != want || got[0] != task.TaskID+"/s/1" || got[len(got)-1] != got[0] {
				t.Fatalf("adapter calls %q, want %d under the key %s/s/1", got, want, task.TaskID)
			}
		})
	}
}

// TestMCPAdapterStartedBeforeACrashIsUnknown: rein mcp is killed (SIGKILL)
// while a non-idempotent adapter runs, after it did its effect; the
// submit_from_source retried against a new process does not call the
// adapter again (a second call would answer at once): its journaled
// start, never settled, makes the call unknown, and the answer says a
// person decides.
func TestMCPAdapterStartedBeforeACrashIsUnknown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger, fifo := filepath.Join(dir, "ledger"), filepath.Join(dir, "hold")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// the first call appends, then blocks on the fifo; a later one answers.
	script := `cat > /dev/null; if [ -s "$0" ]; then echo again >> "$0"; echo '{"total": 1}'; else echo first >> "$0"; cat "$1"; fi`
	files := map[string]string{
		"rein.yaml": fmt.Sprintf("adapters:\n  fetch:\n    command: [\"sh\", \"-c\", %q, %q, %q]\n    effect: write\n", script, ledger, fifo),
		"flow.yaml": "name: src\ninputs: {type: object}\nsteps:\n  - {id: s, adapter: fetch, skill: fetch-it, requires: []}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // let the blocked adapter end
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	db := filepath.Join(dir, "rein.db")
	m := serveMCP(t, db, dir)
	text, isErr := m.call("src_workflow", map[string]any{"action": "start", "input": map[string]any{}})
	var task struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal([]byte(text), &task); isErr || err != nil || task.TaskID == "" {
		t.Fatalf("start: error %v, %s", isErr, text)
	}
	submit := map[string]any{"action": "submit_from_source", "task_id": task.TaskID, "step_id": "s"}
	go func() { _, _ = m.cs.CallTool(m.ctx, &sdk.CallToolParams{Name: "src_workflow", Arguments: submit}) }()
	for deadline := time.Now().Add(30 * time.Second); len(ledgerLines(t, ledger)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the adapter did not run\n%s", m.stderr.String())
		}
	}
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.stop()

	m = serveMCP(t, db, dir)
	text, isErr = m.call("src_workflow", submit)
	m.stop()
	if !isErr || !strings.Contains(text, "outcome is unknown") || !strings.Contains(text, "rein runs settle "+task.TaskID+" s") {
		t.Errorf("retried submit_from_source: error %v, %s; want unknown, a person decides", isErr, text)
	}
	if got := ledgerLines(t, ledger); len(got) != 1 {
		t.Errorf("adapter calls %q, want the one before the crash", got)
	}
}
