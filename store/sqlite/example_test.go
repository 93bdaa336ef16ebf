package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/store/sqlite"
	"github.com/reinhq/rein/trace"
)

func Example() {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, ":memory:", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	run, _, err := s.CreateRun(ctx, &store.CreateRunParams{
		ID: "run-1", Flow: "triage", FlowText: []byte("name: triage\n"), Input: json.RawMessage(`{"q":"refund?"}`),
	})
	if err != nil {
		log.Fatal(err)
	}

	// One transition: the run starts and its first step settles.
	t := &store.Transition{
		RunID:   run.ID,
		Version: run.Version,
		Events: []*trace.Event{
			{Seq: 1, Kind: trace.RunStarted, RunID: run.ID, Flow: "triage"},
			{Seq: 2, Kind: trace.StepSettled, RunID: run.ID, StepID: "classify", Status: "succeeded"},
		},
		Run:   &store.RunUpdate{Status: trace.RunRunning},
		Steps: []*store.Step{{StepID: "classify", Status: trace.StepSucceeded, Attempt: 1, Output: json.RawMessage(`"billing"`)}},
	}
	if err := s.Commit(ctx, t); err != nil {
		log.Fatal(err)
	}

	got, err := s.GetRun(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.ID, got.Status, "version", got.Version, "last seq", got.LastSeq)
	// Output: run-1 running version 1 last seq 2
}
