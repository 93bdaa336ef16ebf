package rein_test

import (
	"context"
	"fmt"
	"os"

	"github.com/reinhq/rein"
)

// Load a flow folder (flow.yaml with its rein.yaml, script.yaml and
// input.json) and run it offline with the scripted model.
func ExampleLoad() {
	os.Setenv("REIN_OUTBOX", os.TempDir()+"/rein-example-outbox")
	p, err := rein.Load("examples/resume-screen", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	input := map[string]any{"input_text": "Zhang Wei, 8 years of Go"}
	res, err := p.Run(context.Background(), input, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status)
	for _, s := range p.Flow.Steps {
		fmt.Println(s.ID, res.Steps[s.ID].Status, res.Steps[s.ID].Attempts)
	}
	fmt.Println(res.Outputs["score_candidate"])
	// Output:
	// succeeded
	// extract_info succeeded 1
	// score_candidate succeeded 1
	// notify_result succeeded 1
	// map[reason:8 years of Go, led a payments team score:82]
}
