package rein_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/tool"
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
// the run waits, any process later rebuilds it with LoadRun — given the
// same Go tools — and resumes it to the end.
func ExampleLoadRun() {
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

	st, err := rein.OpenStore(ctx, filepath.Join(dir, "runs.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	p, err := rein.Load(dir, &rein.LoadOptions{Tools: tools})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := &rein.RunConfig{Store: st}
	res, err := p.Start(ctx, map[string]any{"order": "A-7", "amount": 20}, cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Pending[0].StepID, res.Pending[0].Tool)

	// later, in any process: a person decides; the run's project is
	// rebuilt from the flow it pinned, with the same Go tools, and resumed.
	_, err = st.DecideApproval(ctx, &rein.DecideApprovalParams{RunID: res.RunID, StepID: "refund",
		Status: rein.ApprovalApproved, DecidedBy: "ops"})
	if err != nil {
		fmt.Println(err)
		return
	}
	again, err := rein.LoadRun(ctx, st, res.RunID, &rein.LoadOptions{Tools: tools})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err = again.Resume(ctx, res.RunID, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status == rein.StatusSucceeded, res.Outputs["refund"], res.Steps["done"].Status)
	// Output:
	// waiting refund refund
	// true map[receipt:R-A-7 refunded:true] skipped
}
