package rein_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
)

// A run of a flow with a Go tool waits for a person. The Client's
// operations (what rein runs, an HTTP API or an MCP server call) show it,
// record the decision and resume it with the program's Go tools; without
// them the error's hint says which tools a resume needs.
func ExampleClient_Decide() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rein-example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(`name: refunds
steps:
  - id: refund
    tool: refund
    approval: required
    args: {order: "{input.order}", amount: "{input.amount}"}
`), 0o644)
	tools := []tool.Tool{tool.Typed(tool.Spec{Name: "refund", Effect: tool.EffectExternal},
		func(_ context.Context, in refundIn) (refundOut, error) {
			return refundOut{Refunded: true, Receipt: "R-" + in.Order}, nil
		})}
	db := filepath.Join(dir, "runs.db")
	// the program that has the Go tools starts the run; it waits.
	c, err := rein.Open(ctx, rein.Config{DB: db, Load: &project.LoadOptions{Tools: tools}})
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

	// a program without the Go tools can show the run, not resume it.
	bare, _ := rein.Open(ctx, rein.Config{Store: c.Store()})
	view, _ := bare.Runs().Show(ctx, "last")
	fmt.Println(view.Run.Status, view.Pending()[0].StepID, view.NeedsTools)
	_, err = bare.Resume(ctx, res.RunID, nil)
	var e *rein.Error
	if errors.As(err, &e) {
		fmt.Println(e.Class, e.Hint.Code, e.Hint.Tools, e.Retryable())
	}

	// the program that has them decides and resumes.
	out, err := c.Decide(ctx, res.RunID, "refund", rein.Decision{Status: store.ApprovalApproved, By: "ops", Comment: "ok"},
		&rein.DecideOptions{Resume: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Approval.Status, out.Approval.DecidedBy, out.Result.Status, out.Result.Outputs["refund"])
	// Output:
	// waiting refund [refund]
	// business needs_tools [refund] false
	// approved ops succeeded map[receipt:R-A-7 refunded:true]
}
