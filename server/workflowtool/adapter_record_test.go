package workflowtool_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/store"
)

// TestRetriedSourceAnswersFromTheRecord: a non-idempotent adapter whose
// output the step rejects runs once however often submit_from_source is
// retried (its record, committed in the task, answers), on SQLite and on
// PostgreSQL; the record is the call's, settled, under the step's key.
func TestRetriedSourceAnswersFromTheRecord(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(*testing.T) store.Store{"sqlite": openStore, "postgres": openPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			dir := t.TempDir()
			ledger := filepath.Join(dir, "ledger")
			files := map[string]string{
				"rein.yaml": fmt.Sprintf("adapters:\n  fetch:\n    command: [\"sh\", \"-c\", \"cat > /dev/null; echo x >> \\\"$0\\\"; echo '{\\\"rows\\\": 1}'\", %q]\n    effect: write\n", ledger),
				"flow.yaml": "name: src\ninputs: {type: object}\nsteps:\n  - id: s\n    adapter: fetch\n    skill: fetch-it\n    requires: []\n" +
					"    output_schema: {type: object, properties: {total: {type: number}}, required: [total]}\n",
			}
			for n, text := range files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w := newWorkflow(t, dir, st)
			a, e := do(t, w, `{"action": "start", "input": {}}`)
			if e != nil {
				t.Fatal(e)
			}
			for try := 0; try < 3; try++ {
				if _, e := do(t, w, `{"action": "submit_from_source", "task_id": "`+a.TaskID+`", "step_id": "s"}`); e == nil || !strings.Contains(e.Message, "output_schema") {
					t.Fatalf("try %d: %v, want the output rejected", try, e)
				}
			}
			if data, _ := os.ReadFile(ledger); strings.Count(string(data), "x") != 1 {
				t.Errorf("the adapter ran %d times, want once", strings.Count(string(data), "x"))
			}
			calls, err := st.Calls(t.Context(), a.TaskID, "s")
			if err != nil || len(calls) != 1 || calls[0].Key != a.TaskID+"/s/1" || calls[0].Status != store.CallSucceeded || string(calls[0].Output) != `{"rows":1}` {
				t.Errorf("records: %v, %+v", err, calls)
			}
		})
	}
}
