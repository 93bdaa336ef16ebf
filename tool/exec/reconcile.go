package exec

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/tool"
)

// Checked is a Tool whose declaration has a check command: a tool.Checker.
// Tool.Checker returns it.
type Checked struct{ *Tool }

var _ tool.Checker = Checked{}

// Checker returns t as a tool.Checker when it was declared with a check
// command (Config.Check), else t itself.
func (t *Tool) Checker() tool.Tool {
	if t.check == nil {
		return t
	}
	return Checked{t}
}

// CheckCall runs the check command. The protocol: the request
// (tool.CheckRequest: {"args", "idempotency_key", "output_schema"}) as one
// JSON object and a newline on stdin, with REIN_IDEMPOTENCY_KEY and the
// other call variables set as for the call; on stdout exactly one JSON
// object, {"happened": true, "output": …} (the call took effect and
// produced output) or {"happened": false} (it did not); exit 0. Any other
// exit, a timeout, or an answer that is not one of those two means the
// check cannot say: an error, and a person decides.
func (c Checked) CheckCall(ctx context.Context, req tool.CheckRequest) (tool.CheckResult, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return tool.CheckResult{}, c.check.errorf(fault.Business, "cannot encode the check request: %w", err)
	}
	var in any
	if err := json.Unmarshal(raw, &in); err != nil {
		return tool.CheckResult{}, c.check.errorf(fault.Business, "cannot encode the check request: %w", err)
	}
	out, err := c.check.Call(ctx, in)
	if err != nil {
		return tool.CheckResult{}, err
	}
	ans, err := json.Marshal(out)
	if err != nil {
		return tool.CheckResult{}, c.check.errorf(fault.Business, "answer: %w", err)
	}
	var res struct {
		Happened *bool           `json:"happened"`
		Output   json.RawMessage `json:"output"`
	}
	dec := json.NewDecoder(bytes.NewReader(ans))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil || res.Happened == nil {
		return tool.CheckResult{}, c.check.errorf(fault.Business, "answer %.200s is not {\"happened\": true, \"output\": …} or {\"happened\": false}", ans)
	}
	if !*res.Happened {
		if len(res.Output) > 0 && string(res.Output) != "null" {
			return tool.CheckResult{}, c.check.errorf(fault.Business, "answer says the call did not happen, yet gives an output: say one or the other")
		}
		return tool.CheckResult{}, nil
	}
	if len(res.Output) == 0 {
		return tool.CheckResult{}, c.check.errorf(fault.Business, "answer says the call happened without its output: give {\"happened\": true, \"output\": …}")
	}
	var v any
	_ = json.Unmarshal(res.Output, &v)
	return tool.CheckResult{Happened: true, Output: v}, nil
}
