package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A run recorded with --record replays with --replay without its script:
// the same decisions, the same outputs, no model asked.
func TestRecordAndReplayARun(t *testing.T) {
	t.Parallel()
	tape := filepath.Join(t.TempDir(), "routing.cassette.json")
	input := `{"text": "I think I was charged twice this month"}`
	recorded := runExample(t, "routing", "--input-json", input, "--record", tape)
	if _, err := os.Stat(tape); err != nil {
		t.Fatalf("no cassette written: %v", err)
	}
	replayed := runExample(t, "routing", "--input-json", input, "--replay", tape)
	if !reflect.DeepEqual(recorded.Outputs, replayed.Outputs) {
		t.Fatalf("replay differs:\nrecorded %v\nreplayed %v", recorded.Outputs, replayed.Outputs)
	}
	// another request is not in the cassette: the run fails, nothing is guessed.
	code, out, _ := cli(t, "run", "../../examples/routing", "--output", "json", "--input-json", `{"text": "Where is my parcel?"}`, "--replay", tape)
	if code != exitRunFailed || !strings.Contains(out, "record the cassette again") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if code, _, stderr := cli(t, "run", "../../examples/routing", "--replay", tape, "--script", "x.yaml"); code != exitUsage || !strings.Contains(stderr, "does not go with") {
		t.Fatalf("--replay with --script: exit %d %s", code, stderr)
	}
}
