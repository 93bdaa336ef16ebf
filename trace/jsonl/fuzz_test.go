package jsonl

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/reinhq/rein/trace"
)

// FuzzEmit checks that any strings in an event give one valid JSON line that
// decodes back to the event and equals what encoding/json writes.
func FuzzEmit(f *testing.F) {
	for _, s := range nasty {
		if len(s) > 256 { // long seeds make minimizing new inputs crawl
			continue
		}
		f.Add(s, s, int64(1), int64(1773480413589793238), 2)
	}
	f.Add("a\x00b", "\xff", int64(-1), int64(0), -3)
	f.Fuzz(func(t *testing.T, a, b string, seq, unixNano int64, n int) {
		e := trace.Event{
			Seq: seq, Time: time.Unix(0, unixNano), Kind: trace.Kind(a), RunID: b,
			Flow: a + b, StepID: b, StepType: a, Attempt: n, Status: a, DurationMS: float64(seq) / 7,
			Model: b, Tool: a, TokensIn: n, TokensOut: -n, ErrorClass: b, Error: a + "\n" + b,
			Origin: trace.Origin(b), Budget: a, Decision: b, PlanStep: a, InputSHA: a, OutputSHA: b, Preview: a,
		}
		line := appendEvent(nil, &e) // the sink's encoder; Sink itself is tested in jsonl_test.go
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("not exactly one line: %q", line)
		}
		if !json.Valid(line) {
			t.Fatalf("invalid JSON: %q", line)
		}
		if want := stdlib(t, &e); !bytes.Equal(line, want) {
			t.Fatalf("differs from encoding/json\n got: %q\nwant: %q", line, want)
		}
		var out trace.Event
		if err := json.Unmarshal(line, &out); err != nil {
			t.Fatalf("decode: %v", err)
		}
		if want := sanitizeEvent(e); !reflect.DeepEqual(out, want) {
			t.Fatalf("round trip\n got: %+v\nwant: %+v", out, want)
		}
	})
}
