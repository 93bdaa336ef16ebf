package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// workerPatience is how long a command waits for a run's workflow to
// answer before it looks for the workers of the run's task queue.
const workerPatience = 3 * time.Second

// lockedWriter serialises the writes of the goroutines sharing w (the
// follow loop and watchWorkers both write to stderr).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// watchWorkers says on w, once, that no worker polls run runID's task
// queue, when the run's workflow has not answered (answered not called)
// within workerPatience: a query or an update waits for a worker, and
// without this a command would wait in silence for one that was never
// started. The run goes on when a worker comes; the command keeps
// waiting. stop ends the watch; it returns once the watcher has.
func watchWorkers(ctx context.Context, cl client.Client, hostport, namespace, runID string, w io.Writer) (answered, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	heard := make(chan struct{})
	done := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			return
		case <-heard:
			return
		case <-time.After(workerPatience):
		}
		queue, n, err := queuePollers(ctx, cl, runID)
		if err != nil || n > 0 {
			return // a worker polls: the run is slow, not stranded
		}
		select {
		case <-heard:
			return
		default:
		}
		fmt.Fprintf(w, "rein: no worker polls task queue %q (namespace %s, %s): run %s goes on when one does: rein worker --temporal %s --namespace %s --task-queue %s DIR...\n",
			queue, namespace, hostport, runID, hostport, namespace, queue)
	}()
	return func() { once.Do(func() { close(heard) }) }, func() { cancel(); <-done }
}

// queuePollers is the task queue of run runID's workflow and how many
// workers poll it for workflow tasks.
func queuePollers(ctx context.Context, cl client.Client, runID string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	desc, err := cl.DescribeWorkflowExecution(ctx, runID, "")
	if err != nil {
		return "", 0, err
	}
	queue := desc.GetExecutionConfig().GetTaskQueue().GetName()
	if queue == "" {
		queue = desc.GetWorkflowExecutionInfo().GetTaskQueue()
	}
	tq, err := cl.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return queue, 0, err
	}
	return queue, len(tq.GetPollers()), nil
}
