package temporal_test

import (
	"context"
	"log"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
)

// A worker serving a flow folder, and a client starting a run of it and
// following it until it settles or waits for a person. It needs a
// Temporal server (here 127.0.0.1:7233), so it is not run as a test.
func Example() {
	ctx := context.Background()
	c, err := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	flows := temporal.NewFlows()
	if err := flows.Load([]string{"../examples/weather-brief"}, nil); err != nil {
		log.Fatal(err)
	}
	w := worker.New(c, "rein", temporal.WorkerOptions(worker.Options{}, 0))
	temporal.Register(w, &temporal.Workflow{Flows: flows}, &temporal.Activities{Flows: flows, Client: c})
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	defer w.Stop()

	p, err := project.Load("../examples/weather-brief", nil)
	if err != nil {
		log.Fatal(err)
	}
	run, err := temporal.StartRun(ctx, c, p, map[string]any{"city": "Tokyo"}, temporal.StartOptions{TaskQueue: "rein"})
	if err != nil {
		log.Fatal(err)
	}
	st, err := temporal.Follow(ctx, c, run.GetID(), 200*time.Millisecond, nil)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("run %s %s", st.RunID, st.Status)
}
