package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
)

// Register registers the run workflow and its activities with a worker
// (or a test environment): one dynamic workflow, so that a run's workflow
// type is its flow's name, and one dynamic activity, so that an attempt's
// activity type is its step's kind and id.
func Register(r worker.Registry, w *Workflow, a *Activities) {
	RegisterWorkflow(r, w)
	r.RegisterDynamicActivity(a.Run, activity.DynamicRegisterOptions{})
}

// RegisterWorkflow registers the run workflow alone (a replayer runs no
// activity).
func RegisterWorkflow(r worker.WorkflowRegistry, w *Workflow) {
	r.RegisterDynamicWorkflow(w.Run, workflow.DynamicRegisterOptions{})
}

// NewWorker is a worker on queue that runs the flows of fs.
func NewWorker(c client.Client, queue string, fs *Flows, opts worker.Options) worker.Worker {
	wk := worker.New(c, queue, WorkerOptions(opts, 0))
	Register(wk, &Workflow{Flows: fs}, &Activities{Flows: fs, Client: c})
	return wk
}

// StartOptions are a run's start options.
type StartOptions struct {
	// RunID is the workflow's id; empty: a new UUIDv7. Starting a run id
	// that exists returns that run (its workflow) rather than a second.
	RunID     string
	TaskQueue string
	// Tenant is who the run is for: its AttrTenant search attribute.
	Tenant string
	// Namespace is the client's namespace, where StartRun looks up rein's
	// search attributes (HasSearchAttributes); empty: "default". A run
	// whose namespace lacks them starts without them.
	Namespace string
	// Session is the session id a flow whose idempotency: is
	// session_workflow_input_hash needs (StartID).
	Session string
}

// keySpace is the UUID namespace of run ids made from start keys.
var keySpace = uuid.MustParse("6f0a3c52-7d1e-4b8f-9a63-2c5e8d4b1f70")

// StartID is the workflow id a start of p with input takes, and the start
// key the flow's idempotency: derives (engine.StartKey, "" for none):
// o.RunID when given; else, with a key, a UUID made from the key
// (uuid.NewSHA1), so a second start with the same key is the same
// workflow and, as a local start does, returns that run whatever its
// status; else "" (StartRun makes a new UUIDv7). An input the flow
// refuses, or a session the policy needs and lacks
// (engine.ErrSessionRequired), is an error.
func StartID(p *project.Project, input any, o StartOptions) (id, key string, err error) {
	in, err := engine.CheckInput(p.Flow, input)
	if err != nil {
		return "", "", err
	}
	if key, err = engine.StartKey(p.Flow, in, o.Session); err != nil {
		return "", "", fmt.Errorf("flow %s: %w", p.Flow.Name, err)
	}
	if o.RunID != "" || key == "" {
		return o.RunID, key, nil
	}
	return uuid.NewSHA1(keySpace, []byte(key)).String(), key, nil
}

// StartInput is the workflow input of a run of p with input: its pinned
// flow and its input (its secrets hidden when p has no encryption key:
// hideInput).
func StartInput(p *project.Project, input any) (Start, error) {
	in, err := engine.CheckInput(p.Flow, input)
	if err != nil {
		return Start{}, err
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return Start{}, fmt.Errorf("run input: %w", err)
	}
	return Start{Flow: p.Flow.Name, FlowHash: engine.FlowHash(p.Flow), FlowText: string(p.Flow.Source), Input: hideInput(p, raw)}, nil
}

// StartRun starts a run of p on Temporal: a workflow whose id is the
// run's id (StartID) and whose type is the flow's name. A start with the
// id of a run that exists, running or closed, returns that run
// (idempotent start).
func StartRun(ctx context.Context, c client.Client, p *project.Project, input any, o StartOptions) (client.WorkflowRun, error) {
	in, err := StartInput(p, input)
	if err != nil {
		return nil, err
	}
	id, _, err := StartID(p, input, o)
	if err != nil {
		return nil, err
	}
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	in.Tenant = o.Tenant
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	opts := client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                o.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	if ok, err := HasSearchAttributes(ctx, c, ns); err == nil && ok {
		in.SearchAttributes = true
		opts.TypedSearchAttributes = startAttributes(&in)
	}
	return c.ExecuteWorkflow(ctx, opts, p.Flow.Name, in)
}

// Decide sends a decision to run runID's waiting step (UpdateDecide) and
// waits until the run took it; a decision the run cannot take is refused
// by the update's validator, with nothing written.
func Decide(ctx context.Context, c client.Client, runID string, d Decision) error {
	return Update(ctx, c, runID, UpdateDecide, d)
}

// Update sends run runID the update name (UpdateDecide, UpdateSubmit,
// UpdateRetry) with d and waits until the run took it; one the run cannot
// take is refused by the update's validator, with nothing written.
func Update(ctx context.Context, c client.Client, runID, name string, d Decision) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   runID,
		UpdateName:   name,
		Args:         []any{d},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// Query asks run runID one of its queries (QueryStatus, QueryPending,
// QueryNextActions) and decodes the answer into out.
func Query(ctx context.Context, c client.Client, runID, query string, out any) error {
	v, err := c.QueryWorkflow(ctx, runID, "", query)
	if err != nil {
		return err
	}
	return v.Get(out)
}

// Follow waits until run runID settles or waits for someone, polling its
// status every poll, and returns its last Status (a failed run's as its
// query answers it, or as its workflow's failure carries it: Closed).
func Follow(ctx context.Context, c client.Client, runID string, poll time.Duration, seen func(*Status)) (*Status, error) {
	for {
		var st Status
		if err := Query(ctx, c, runID, QueryStatus, &st); err != nil {
			// a run that finished answers its result (a failed one its
			// failure's Closed).
			var res Status
			gerr := c.GetWorkflow(ctx, runID, "").Get(ctx, &res)
			if gerr == nil {
				return &res, nil
			}
			if st, ok := StatusOf(gerr); ok {
				return st, nil
			}
			return nil, err
		}
		if seen != nil {
			seen(&st)
		}
		switch st.Status {
		case "failed":
			// a failed run's status is its last word until it is
			// retried (RetryRun), open (a retry window) or closed.
			return &st, nil
		case "succeeded", "cancelled":
			var res Status
			if err := c.GetWorkflow(ctx, runID, "").Get(ctx, &res); err != nil {
				if st, ok := StatusOf(err); ok {
					return st, nil
				}
				return nil, err
			}
			return &res, nil
		case "waiting":
			return &st, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// DefaultHeartbeat is how often a running attempt heartbeats when the
// Workflow and Activities name no Heartbeat; its activity's heartbeat
// timeout is three times it.
const DefaultHeartbeat = 2 * time.Second

// WorkerOptions are o for a worker whose attempts heartbeat every beat
// (zero: DefaultHeartbeat): unless o says otherwise, the SDK is told to
// send each heartbeat at most beat after the last one
// (MaxHeartbeatThrottleInterval). Left to itself it holds heartbeats back
// for 80 % of the heartbeat timeout, which leaves an attempt 20 % of it
// (1.2 s of 6 s) before the server takes its worker for lost: a busy
// worker or a slow round trip then has a live attempt taken for lost, and
// its step made again or parked as unknown. Sent every beat, a heartbeat
// has two beats of slack.
func WorkerOptions(o worker.Options, beat time.Duration) worker.Options {
	if beat <= 0 {
		beat = DefaultHeartbeat
	}
	if o.MaxHeartbeatThrottleInterval == 0 {
		o.MaxHeartbeatThrottleInterval = beat
	}
	return o
}
