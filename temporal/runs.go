package temporal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/reinhq/rein/redact/seal"
)

// RunView is what rein runs show --temporal prints: the run's Status (its
// status query for an open run, its result for a closed one), the
// approvals it waits on and what may be done with it next.
type RunView struct {
	*Status
	// Workflow is the workflow's Temporal status (Running, Completed,
	// Failed, Canceled, Terminated, TimedOut, ContinuedAsNew).
	Workflow    string       `json:"workflow_status"`
	Started     time.Time    `json:"started"`
	Closed      time.Time    `json:"closed,omitzero"`
	Pending     []Pending    `json:"pending"`
	NextActions []NextAction `json:"next_actions"`
}

// ShowRun is run runID's RunView. An open run answers its queries (a
// worker must serve its task queue); a closed one its result, or the
// Status its failure or cancellation carries (StatusOf); a workflow that
// ended without one (terminated, timed out) shows its Temporal status.
func ShowRun(ctx context.Context, c client.Client, runID string) (*RunView, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return nil, err
	}
	info := desc.GetWorkflowExecutionInfo()
	v := &RunView{Workflow: info.GetStatus().String(), Started: info.GetStartTime().AsTime(), Pending: []Pending{}, NextActions: []NextAction{}}
	if t := info.GetCloseTime(); t != nil {
		v.Closed = t.AsTime()
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		var st Status
		if err := Query(ctx, c, runID, QueryStatus, &st); err != nil {
			return nil, fmt.Errorf("query its status (is a worker serving task queue %s?): %w", info.GetTaskQueue(), err)
		}
		v.Status = &st
		if err := Query(ctx, c, runID, QueryPending, &v.Pending); err != nil {
			return nil, err
		}
		if err := Query(ctx, c, runID, QueryNextActions, &v.NextActions); err != nil {
			return nil, err
		}
		return v, nil
	}
	var res Status
	gerr := c.GetWorkflow(ctx, runID, info.GetExecution().GetRunId()).Get(ctx, &res)
	switch st, ok := StatusOf(gerr); {
	case gerr == nil:
		v.Status = &res
	case ok:
		v.Status = st
		if _, retryable := ClosedOf(gerr); retryable && info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
			v.NextActions = append(v.NextActions, closedRetry(runID, st.Error)) // what RetryRun takes
		}
	case sealed(gerr):
		return nil, fmt.Errorf("run %s closed %s, and its result does not open here: %w", runID, v.Workflow, gerr)
	default:
		v.Status = &Status{RunID: runID, Flow: info.GetType().GetName(), Status: strings.ToLower(v.Workflow),
			Error: &RunError{Class: "workflow", Message: gerr.Error()}}
	}
	return v, nil
}

// sealed reports whether err is a sealed payload that did not open: one
// of a key this client does not hold, or damaged.
func sealed(err error) bool {
	var missing *seal.MissingKeyError
	var bad *seal.Error
	return errors.As(err, &missing) || errors.As(err, &bad)
}

// ListOptions select the runs ListRuns lists; empty fields select all.
type ListOptions struct {
	Flow, Status, Tenant string
	// Limit bounds the runs listed; zero: 100.
	Limit int
}

// RunRow is one run ListRuns lists.
type RunRow struct {
	RunID   string    `json:"run_id"`
	Flow    string    `json:"flow"`
	Status  string    `json:"status"`
	Tenant  string    `json:"tenant,omitempty"`
	Started time.Time `json:"started"`
	Closed  time.Time `json:"closed,omitzero"`
}

// maxListValue bounds a ListOptions field.
const maxListValue = 256

// runStatuses are the values AttrStatus takes.
var runStatuses = []string{"running", "waiting", "succeeded", "failed", "cancelled"}

// ListQuery is the visibility query of o: its fields as AttrFlow,
// AttrStatus and AttrTenant. A value holding a quote or a backslash is
// refused (it could change the query), as is one past maxListValue bytes
// or a status AttrStatus never takes.
func ListQuery(o ListOptions) (string, error) {
	if o.Status != "" && !slices.Contains(runStatuses, o.Status) {
		return "", fmt.Errorf("--status %q: give one of %s", o.Status, strings.Join(runStatuses, ", "))
	}
	var parts []string
	for _, f := range []struct{ attr, flag, v string }{{AttrFlow, "--flow", o.Flow}, {AttrStatus, "--status", o.Status}, {AttrTenant, "--tenant", o.Tenant}} {
		if f.v == "" {
			continue
		}
		if len(f.v) > maxListValue {
			return "", fmt.Errorf("%s: %d bytes, more than %d", f.flag, len(f.v), maxListValue)
		}
		if i := strings.IndexAny(f.v, `'"\`); i >= 0 {
			return "", fmt.Errorf("%s %q: a quote or backslash at byte %d; give the name as it is, without quotes", f.flag, f.v, i)
		}
		parts = append(parts, fmt.Sprintf("%s = '%s'", f.attr, f.v))
	}
	return strings.Join(parts, " AND "), nil
}

// ListRuns lists the runs o selects through the visibility API (its
// search attributes: a namespace without them has only runs' workflow
// types), newest start first, at most o.Limit.
func ListRuns(ctx context.Context, c client.Client, ns string, o ListOptions) ([]RunRow, error) {
	q, err := ListQuery(o)
	if err != nil {
		return nil, err
	}
	limit := o.Limit
	if limit <= 0 {
		limit = 100
	}
	rows := []RunRow{}
	var token []byte
	for {
		res, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: q, PageSize: int32(min(limit, 1000)), NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list runs (query %q): %w", q, err)
		}
		for _, info := range res.GetExecutions() {
			r := RunRow{RunID: info.GetExecution().GetWorkflowId(), Flow: info.GetType().GetName(), Started: info.GetStartTime().AsTime(),
				Status: strings.ToLower(info.GetStatus().String())}
			if t := info.GetCloseTime(); t != nil {
				r.Closed = t.AsTime()
			}
			attrs := info.GetSearchAttributes().GetIndexedFields()
			for name, dst := range map[string]*string{AttrFlow: &r.Flow, AttrStatus: &r.Status, AttrTenant: &r.Tenant} {
				var s string
				if p, ok := attrs[name]; ok && converter.GetDefaultDataConverter().FromPayload(p, &s) == nil && s != "" {
					*dst = s
				}
			}
			rows = append(rows, r)
		}
		token = res.GetNextPageToken()
		if len(token) == 0 || len(rows) >= limit {
			break
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Started.After(rows[j].Started) })
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

// CancelRun asks run runID's workflow to cancel (the run ends cancelled:
// cancel.go) and waits until it closed; it returns the run's final
// Status. A workflow already closed is refused (the server would take the
// request and do nothing). The cancellation names no run id, so it goes to
// the workflow id's current run: the one a run continued as new to, once
// it did (the server makes the new run current as it closes the old one),
// and the result followed is the last run's (Get follows each
// continue-as-new). A cancellation that reaches a run as it continues as
// new ends that run cancelled instead (cancelledAtCarry).
func CancelRun(ctx context.Context, c client.Client, runID string) (*Status, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return nil, err
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, fmt.Errorf("its workflow already closed (%s): nothing to cancel", st)
	}
	if err := c.CancelWorkflow(ctx, runID, ""); err != nil {
		return nil, err
	}
	var res Status
	err = c.GetWorkflow(ctx, runID, "").Get(ctx, &res)
	if err == nil {
		return &res, nil
	}
	if st, ok := StatusOf(err); ok {
		return st, nil
	}
	return nil, err
}
