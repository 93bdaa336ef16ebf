package temporal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// A run's record on Temporal is its workflow's history: rein writes no
// journal there. The readers here fold the histories of every execution of
// a run's workflow id (the runs continue-as-new chained, and the new
// executions of a retried run), oldest first, into the views the local
// commands give: the calls that touched the world (Effects), the agents'
// transcripts (Sessions) and where the time went (Trace).

// Limits on what a reader takes in: a workflow id of more executions, or
// an execution of more events, is refused rather than read without bound.
const (
	maxExecutions = 1000
	maxEvents     = 1 << 20
)

// Execution is one execution of a run's workflow: its Temporal run id and
// its events, in order.
type Execution struct {
	RunID  string
	Events []*historypb.HistoryEvent
}

// ReadHistory reads every execution of workflow id runID, oldest first:
// those the visibility API lists for the id, and the chain of runs the
// latest continued (WorkflowExecutionStarted's continued_execution_run_id),
// which visibility may not list yet.
func ReadHistory(ctx context.Context, c client.Client, ns, runID string) ([]Execution, error) {
	if runID == "" || len(runID) > maxListValue || strings.ContainsAny(runID, `'"\`) {
		return nil, fmt.Errorf("run id %q: give the workflow id as it is (at most %d bytes, no quote or backslash)", runID, maxListValue)
	}
	ids := []string{}
	seen := map[string]bool{}
	add := func(id string) bool {
		if id == "" || seen[id] {
			return false
		}
		seen[id] = true
		ids = append(ids, id)
		return true
	}
	var token []byte
	for {
		res, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: fmt.Sprintf("WorkflowId = '%s'", runID), NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the executions of workflow %s: %w", runID, err)
		}
		for _, info := range res.GetExecutions() {
			add(info.GetExecution().GetRunId())
		}
		token = res.GetNextPageToken()
		if len(token) == 0 || len(ids) > maxExecutions {
			break
		}
	}
	desc, err := c.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return nil, err
	}
	byID := map[string]Execution{}
	next := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	add(next)
	for next != "" { // the chain continue-as-new made, newest first
		ex, err := readExecution(ctx, c, runID, next)
		if err != nil {
			return nil, err
		}
		byID[next] = ex
		next = ""
		if len(ex.Events) > 0 {
			if prev := ex.Events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(); add(prev) {
				next = prev
			}
		}
		if len(ids) > maxExecutions {
			break
		}
	}
	if len(ids) > maxExecutions {
		return nil, fmt.Errorf("workflow %s has more than %d executions: not read", runID, maxExecutions)
	}
	out := make([]Execution, 0, len(ids))
	for _, id := range ids {
		ex, ok := byID[id]
		if !ok {
			if ex, err = readExecution(ctx, c, runID, id); err != nil {
				return nil, err
			}
		}
		out = append(out, ex)
	}
	slices.SortStableFunc(out, func(a, b Execution) int { return startOf(a).Compare(startOf(b)) })
	return out, nil
}

// readExecution reads the events of one execution.
func readExecution(ctx context.Context, c client.Client, id, run string) (Execution, error) {
	ex := Execution{RunID: run}
	it := c.GetWorkflowHistory(ctx, id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return ex, fmt.Errorf("history of workflow %s (run %s): %w", id, run, err)
		}
		if len(ex.Events) >= maxEvents {
			return ex, fmt.Errorf("history of workflow %s (run %s): more than %d events, not read", id, run, maxEvents)
		}
		ex.Events = append(ex.Events, ev)
	}
	return ex, nil
}

func startOf(ex Execution) time.Time {
	if len(ex.Events) == 0 {
		return time.Time{}
	}
	return ex.Events[0].GetEventTime().AsTime()
}

// activityRec is one activity of a run as its history tells it.
type activityRec struct {
	// Exec is the execution's run id, Event the id of its scheduled event.
	Exec  string
	Event int64
	Type  string
	ID    string
	In    attemptIn
	// Scheduled, Started and Closed are the events' times (Started and
	// Closed zero while it has not).
	Scheduled, Started, Closed time.Time
	// End is how it closed: "" (open), completed, failed, timed_out,
	// canceled.
	End  string
	Out  *attemptOut
	Fail *failure
}

// The ends of an activity (activityRec.End).
const (
	endCompleted = "completed"
	endFailed    = "failed"
	endTimedOut  = "timed_out"
	endCanceled  = "canceled"
)

// key is the idempotency key the activity's id carries: its id without
// the ~n of a rerun and the #n of a compensation made again.
func (a *activityRec) key() string {
	id := a.ID
	if i := strings.LastIndexByte(id, '~'); i > 0 && digits(id[i+1:]) {
		id = id[:i]
	}
	if i := strings.LastIndexByte(id, '#'); i > 0 && digits(id[i+1:]) && (strings.HasSuffix(id[:i], "/compensate") || strings.HasSuffix(id[:i], "/undo")) {
		id = id[:i]
	}
	return id
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// kind is the activity type's kind (tool, call, agent, compensate, …) and
// name is what follows it: a step id, or a tool for a call.
func (a *activityRec) kind() (kind, name string) {
	kind, name, _ = strings.Cut(a.Type, ":")
	return kind, name
}

// runHistory is what the executions of a run say: the workflow input of
// its first execution, how the last closed, and its activities in the
// order they were scheduled.
type runHistory struct {
	RunID  string
	Start  Start
	Closed string // the last execution's close event type, "" while open
	// Status is the run's status as far as the history says: its result's
	// once it completed, failed, cancelled; running while it is open (a
	// status query says whether it waits).
	Status string
	// Final is the Status the run closed with (its result, or the
	// details of its failure or cancellation), nil while open or when the
	// close carries none.
	Final *Status
	// Began and Ended are the first event's and the last close event's
	// times.
	Began, Ended time.Time
	Activities   []*activityRec
	// steps are the step ids by index, as the activities named them.
	steps map[int]string
}

// foldHistory decodes the activities of execs with dc (the client's data
// converter, so that blob references resolve). An event that does not
// decode is an error naming its execution and event.
func foldHistory(dc converter.DataConverter, runID string, execs []Execution) (*runHistory, error) {
	h := &runHistory{RunID: runID, steps: map[int]string{}}
	for n, ex := range execs {
		open := map[int64]*activityRec{}
		where := func(ev *historypb.HistoryEvent) string {
			return fmt.Sprintf("workflow %s, run %s, event %d", runID, ex.RunID, ev.GetEventId())
		}
		for _, ev := range ex.Events {
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				if n == 0 {
					h.Began = ev.GetEventTime().AsTime()
					a := ev.GetWorkflowExecutionStartedEventAttributes()
					if p := a.GetInput().GetPayloads(); len(p) > 0 {
						if err := dc.FromPayload(p[0], &h.Start); err != nil {
							return nil, fmt.Errorf("%s: workflow input: %w", where(ev), err)
						}
					}
					if h.Start.Flow == "" {
						h.Start.Flow = a.GetWorkflowType().GetName()
					}
				}
				h.Closed, h.Status = "", "running"
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				a := ev.GetActivityTaskScheduledEventAttributes()
				r := &activityRec{Exec: ex.RunID, Event: ev.GetEventId(), Type: a.GetActivityType().GetName(), ID: a.GetActivityId(), Scheduled: ev.GetEventTime().AsTime()}
				if p := a.GetInput().GetPayloads(); len(p) > 0 {
					if err := dc.FromPayload(p[0], &r.In); err != nil {
						return nil, fmt.Errorf("%s: input of activity %s: %w", where(ev), r.ID, err)
					}
				}
				if k, name := r.kind(); k != "call" && k != "" {
					h.steps[r.In.Step] = name
				}
				open[ev.GetEventId()] = r
				h.Activities = append(h.Activities, r)
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				if r := open[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()]; r != nil {
					r.Started = ev.GetEventTime().AsTime()
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				a := ev.GetActivityTaskCompletedEventAttributes()
				r := open[a.GetScheduledEventId()]
				if r == nil {
					continue
				}
				r.End, r.Closed, r.Out = endCompleted, ev.GetEventTime().AsTime(), &attemptOut{}
				if p := a.GetResult().GetPayloads(); len(p) > 0 {
					if err := dc.FromPayload(p[0], r.Out); err != nil {
						return nil, fmt.Errorf("%s: result of activity %s: %w", where(ev), r.ID, err)
					}
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
				a := ev.GetActivityTaskFailedEventAttributes()
				r := open[a.GetScheduledEventId()]
				if r == nil {
					continue
				}
				r.End, r.Closed = endFailed, ev.GetEventTime().AsTime()
				fl := a.GetFailure()
				r.Fail = &failure{Message: fl.GetMessage()}
				if info := fl.GetApplicationFailureInfo(); info != nil {
					r.Fail.Class = info.GetType()
					if p := info.GetDetails().GetPayloads(); len(p) > 0 {
						var d failure
						if err := dc.FromPayload(p[0], &d); err != nil {
							return nil, fmt.Errorf("%s: failure of activity %s: %w", where(ev), r.ID, err)
						}
						if d.Class != "" {
							r.Fail = &d
						}
					}
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
				if r := open[ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()]; r != nil {
					r.End, r.Closed = endTimedOut, ev.GetEventTime().AsTime()
					r.Fail = &failure{Message: "the worker running it was lost (" + ev.GetActivityTaskTimedOutEventAttributes().GetFailure().GetMessage() + ")"}
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
				if r := open[ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()]; r != nil {
					r.End, r.Closed = endCanceled, ev.GetEventTime().AsTime()
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
				enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
				enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
				h.Closed = strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")
				h.Ended = ev.GetEventTime().AsTime()
				h.Status, h.Final = closedStatus(ev), finalStatus(dc, ev)
				if h.Final != nil {
					h.Status = h.Final.Status
				}
			}
		}
	}
	return h, nil
}

// closedStatus is the run status a workflow's close event means.
func closedStatus(ev *historypb.HistoryEvent) string {
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
		return "failed"
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		return "cancelled"
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
		return "running"
	}
	return strings.ToLower(strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_WORKFLOW_EXECUTION_"))
}

// finalStatus is the Status a close event carries: a completed run's
// result, a failed run's Closed, a cancelled run's details.
func finalStatus(dc converter.DataConverter, ev *historypb.HistoryEvent) *Status {
	var p []*commonpb.Payload
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		p = ev.GetWorkflowExecutionCompletedEventAttributes().GetResult().GetPayloads()
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
		var cl Closed
		d := ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetApplicationFailureInfo().GetDetails().GetPayloads()
		if len(d) > 0 && dc.FromPayload(d[0], &cl) == nil && cl.Status != nil && cl.Status.Status != "" {
			return cl.Status
		}
		return nil
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		p = ev.GetWorkflowExecutionCanceledEventAttributes().GetDetails().GetPayloads()
	}
	var st Status
	if len(p) == 0 || dc.FromPayload(p[0], &st) != nil || st.Status == "" {
		return nil
	}
	return &st
}

// stepID is the id of step index i, as the run's activities named it.
func (h *runHistory) stepID(i int) string {
	if id, ok := h.steps[i]; ok {
		return id
	}
	return fmt.Sprintf("#%d", i)
}
