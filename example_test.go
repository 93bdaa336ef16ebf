package rein_test

import (
	"context"
	"fmt"
	"os"

	"github.com/reinhq/rein"
)

// Load a flow folder (flow.yaml with its rein.yaml, script.yaml and
// input.json) and run it offline with the scripted model.
func ExampleClient_Run() {
	os.Setenv("REIN_OUTBOX", os.TempDir()+"/rein-example-outbox")
	ctx := context.Background()
	c, err := rein.Open(ctx, rein.Config{}) // runs kept in memory
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := c.Load("examples/resume-screen")
	if err != nil {
		fmt.Println(err)
		return
	}
	input := map[string]any{"input_text": "Zhang Wei, 8 years of Go"}
	res, err := c.Run(ctx, p, input)
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
