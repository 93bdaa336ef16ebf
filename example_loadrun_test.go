package rein_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

type refundIn struct {
	Order  string  `json:"order"`
	Amount float64 `json:"amount"`
}

type refundOut struct {
	Refunded bool   `json:"refunded"`
	Receipt  string `json:"receipt"`
}

// A durable run of a flow with a Go tool that needs a person's approval:
// the run waits; later, any process with the same Go tools records the
// decision, rebuilds the run's project from the flow it pinned and resumes
// it to the end.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rein-example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(`name: refunds
steps:
  - id: refund
    tool: refund
    approval: required
    args: {order: "{input.order}", amount: "{input.amount}"}
  - id: done
    tool: refund
    when: "refund.refunded == false"
    args: {order: "{input.order}", amount: 0}
`), 0o644)
	tools := []tool.Tool{tool.Typed(tool.Spec{Name: "refund", Effect: tool.EffectExternal},
		func(_ context.Context, in refundIn) (refundOut, error) {
			return refundOut{Refunded: true, Receipt: "R-" + in.Order}, nil
		})}

	c, err := rein.Open(ctx, rein.Config{DB: filepath.Join(dir, "runs.db"), Load: &project.LoadOptions{Tools: tools}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	p, err := c.Load(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.Run(ctx, p, map[string]any{"order": "A-7", "amount": 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Pending[0].StepID, res.Pending[0].Tool)

	// later, in any process: a person decides, and the run is rebuilt from
	// the flow it pinned, with the same Go tools, and resumed.
	out, err := c.Decide(ctx, res.RunID, "refund", rein.Decision{Status: store.ApprovalApproved, By: "ops"},
		&rein.DecideOptions{Resume: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	res = out.Result
	fmt.Println(res.Status == trace.RunSucceeded, res.Outputs["refund"], res.Steps["done"].Status)
	// Output:
	// waiting refund refund
	// true map[receipt:R-A-7 refunded:true] skipped
}
