package tool

import (
	"context"
	"encoding/json"
)

// Checker is implemented by a tool that can ask the outside system, after
// the fact, whether one of its calls took effect: rein.yaml check: for an
// exec tool (package tool/exec), WithCheck for a Go tool. A resumed run
// asks it about every call of the tool whose outcome is unknown (it was
// dispatched, never settled, and the tool is not idempotent) before it
// asks a person.
//
// CheckCall answers Happened with the Output the call produced (checked
// against the tool's output schema), or Happened false: the call did not
// take effect. An error means the check cannot say (the system is down,
// the answer is not clear, the check timed out): a person decides, as
// without a check. CheckCall must honour ctx, which carries its deadline,
// and must not make the call's effect itself.
type Checker interface {
	CheckCall(ctx context.Context, req CheckRequest) (CheckResult, error)
}

// CheckRequest is what a check is asked about: the original call's args,
// its idempotency key (the key the call passed to the outside system) and
// the tool's output schema (nil: any value). Its JSON is what an exec
// check reads on stdin.
type CheckRequest struct {
	Args           any             `json:"args"`
	IdempotencyKey string          `json:"idempotency_key"`
	OutputSchema   json.RawMessage `json:"output_schema,omitempty"`
}

// CheckResult is a check's answer: Happened, with the call's Output, or
// not. Its JSON is what an exec check writes on stdout.
type CheckResult struct {
	Happened bool `json:"happened"`
	Output   any  `json:"output,omitempty"`
}

// WithCheck returns t with check as its Checker: a Go tool that can say
// whether a call took effect (look the idempotency key up in the system
// it calls).
func WithCheck(t Tool, check func(ctx context.Context, req CheckRequest) (CheckResult, error)) Tool {
	return checked{Tool: t, check: check}
}

type checked struct {
	Tool
	check func(ctx context.Context, req CheckRequest) (CheckResult, error)
}

func (c checked) CheckCall(ctx context.Context, req CheckRequest) (CheckResult, error) {
	return c.check(ctx, req)
}
