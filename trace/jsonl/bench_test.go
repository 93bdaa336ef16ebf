package jsonl

import (
	"context"
	"io"
	"testing"

	"github.com/reinhq/rein/trace"
)

// BenchmarkEmit emits the three events of a typical model step.
func BenchmarkEmit(b *testing.B) {
	events := []trace.Event{
		{Seq: 10, Time: t0, Kind: trace.StepStarted, RunID: "0195b3c2-7f4e-7c1a-9d2b-5c1e8f0a4b6d", StepID: "classify", StepType: "llm"},
		{Seq: 11, Time: t0, Kind: trace.ModelCall, RunID: "0195b3c2-7f4e-7c1a-9d2b-5c1e8f0a4b6d", StepID: "classify", Attempt: 1,
			Model: "gpt-4o-mini", TokensIn: 812, TokensOut: 40, DurationMS: 899},
		{Seq: 12, Time: t0, Kind: trace.StepSettled, RunID: "0195b3c2-7f4e-7c1a-9d2b-5c1e8f0a4b6d", StepID: "classify", Attempt: 1,
			Status: "succeeded", DurationMS: 901,
			InputSHA:  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			OutputSHA: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			Preview:   `{"label":"billing","confidence":0.92,"reason":"mentions an invoice & a refund"}`},
	}
	s := New(io.Discard)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Emit(ctx, &events[i%len(events)])
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}
