package workflowtool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store/sqlite"
)

// An agent's session with the workflow tool of examples/process-workflow:
// it keeps only the task id and follows next_actions.
func ExampleWorkflow() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rein-example-")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "rein.db"), nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	w, err := workflowtool.New("../../examples/process-workflow", &workflowtool.Options{Store: st, DeliveryDir: dir})
	if err != nil {
		panic(err)
	}
	a, _ := w.Do(ctx, &workflowtool.Request{Action: "start", SessionID: "s1", Input: json.RawMessage(`{"description": "a welded frame"}`)})
	fmt.Println(w.Name(), a.Status, a.NextActions[0].StepID, a.NextActions[0].Action)
	_, err = w.Do(ctx, &workflowtool.Request{Action: "submit", TaskID: a.TaskID, StepID: "parse", Data: json.RawMessage(`{"items": "frame"}`)})
	var e *workflowtool.Error
	errors.As(err, &e)
	fmt.Println(e.Type, e.Problems[0].Pointer, e.Problems[0].Reason)
	a, _ = w.Do(ctx, &workflowtool.Request{Action: "submit", TaskID: a.TaskID, StepID: "parse", Data: json.RawMessage(`{"items": ["frame"]}`)})
	fmt.Println(a.Status, a.NextActions[0].StepID, a.Artifacts[0].Producer)
	// Output:
	// process_workflow waiting parse submit
	// business /items got string, want array
	// waiting route agent
}
