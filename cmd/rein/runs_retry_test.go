package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// retryCLIFlow: charge has an effect and is not idempotent; notify fails
// (exit 75, a transient error, no retries) until the file "up" exists.
// Both append their idempotency key to calls.log.
const retryCLIFlow = `name: retry_cli
steps:
  - {id: charge, tool: charge, args: {}}
  - {id: notify, tool: notify, args: {}, retries: 0}
tools:
  charge: {command: ["sh", "-c", "echo charge $REIN_IDEMPOTENCY_KEY >> calls.log; echo '{}'"], effect: external}
  notify: {command: ["sh", "-c", "echo notify $REIN_IDEMPOTENCY_KEY >> calls.log; test -e up || exit 75; echo '{}'"], effect: external}
`

// TestRunsRetry: a run that failed after its charge is retried with rein
// runs retry: same run, the charge not made again, notify at attempt 2;
// a run that is not failed and a step the flow lacks are exit 2.
func TestRunsRetry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(retryCLIFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "rein.db")
	code, out, stderr := cli(t, "run", dir, "--db", db, "-o", "json")
	var res durableResult
	decodeOne(t, out, &res)
	if code != exitRunFailed || res.Status != "failed" {
		t.Fatalf("run: exit %d %+v\n%s", code, res, stderr)
	}
	code, _, stderr = cli(t, "runs", "retry", res.RunID, "--from", "notfy", "--db", db)
	if code != exitUsage || !strings.Contains(stderr, `did you mean "notify"`) {
		t.Fatalf("retry --from notfy: exit %d\n%s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "up"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = cli(t, "runs", "retry", res.RunID, "--db", db, "-o", "json")
	var again durableResult
	decodeOne(t, out, &again)
	if code != exitOK || again.Status != "succeeded" || again.RunID != res.RunID {
		t.Fatalf("retry: exit %d %+v\n%s", code, again, stderr)
	}
	want := "charge " + res.RunID + "/charge/1\nnotify " + res.RunID + "/notify/1\nnotify " + res.RunID + "/notify/2\n"
	if got := readFile(t, filepath.Join(dir, "calls.log")); got != want {
		t.Fatalf("calls.log:\n%s\nwant:\n%s", got, want)
	}
	code, _, stderr = cli(t, "runs", "retry", res.RunID, "--db", db)
	if code != exitUsage || !strings.Contains(stderr, "is not failed (its status is succeeded)") {
		t.Fatalf("retry a succeeded run: exit %d\n%s", code, stderr)
	}
}
