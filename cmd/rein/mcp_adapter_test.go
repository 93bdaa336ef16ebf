package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
