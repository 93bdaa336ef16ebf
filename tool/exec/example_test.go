//go:build linux

package exec_test

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/exec"
)

func ExampleNew() {
	greet, err := exec.New(exec.Config{
		Name:    "greet",
		Command: []string{"sh", "-c", `read -r args; printf '{"greeting": "hello", "args": %s, "step": "%s"}' "$args" "$REIN_STEP_ID"`},
		Effect:  tool.EffectNone,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := tool.WithCallInfo(context.Background(), &tool.CallInfo{RunID: "r1", StepID: "welcome", Attempt: 1, IdempotencyKey: "r1/welcome/1"})
	out, err := greet.Call(ctx, map[string]any{"name": "Zhang"})
	fmt.Println(out, err)

	flaky, _ := exec.New(exec.Config{Name: "flaky", Command: []string{"sh", "-c", "echo busy >&2; exit 75"}, Effect: tool.EffectRead})
	_, err = flaky.Call(ctx, nil)
	fmt.Println(fault.ClassOf(err), err)
	// Output:
	// map[args:map[name:Zhang] greeting:hello step:welcome] <nil>
	// transient tool flaky: temporary failure (exit code 75); stderr: busy
}
