package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed attempt's cause chain reaches every view: the JSONL trace
// (--trace), runs show and runs why, with the tool's stderr tail as the
// detail of its link and a secret of the environment hidden in it.
func TestFailedAttemptChain(t *testing.T) {
	// Not parallel: it sets an environment variable.
	const secret = "chain-demo-token-5b1e9c"
	t.Setenv("DEMO_CHAIN_TOKEN", secret)
	dir := t.TempDir()
	flowText := `name: chain
tools:
  fetch:
    command: ["sh", "-c", "cat >/dev/null; echo 'connecting to the vault' >&2; echo \"the vault refused ` + secret + `\" >&2; exit 3"]
    effect: read
steps:
  - {id: fetch, tool: fetch, args: {}}
`
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flowText), 0o644); err != nil {
		t.Fatal(err)
	}
	db, tracePath := filepath.Join(dir, "rein.db"), filepath.Join(dir, "trace.jsonl")
	code, out, stderr := cli(t, "run", dir, "--db", db, "--trace", tracePath, "--output", "json")
	if code != exitRunFailed {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	var res durableResult
	decodeOne(t, out, &res)

	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var failed int
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var e struct {
			Kind  string `json:"kind"`
			Chain []struct {
				Type       string `json:"type"`
				DetailKind string `json:"detail_kind"`
				Detail     string `json:"detail"`
			} `json:"chain"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sc.Text(), secret) {
			t.Errorf("the trace holds the secret: %s", sc.Text())
		}
		if e.Kind != "attempt_failed" {
			continue
		}
		failed++
		var stderrs int
		for _, c := range e.Chain {
			if c.DetailKind == "stderr" && strings.Contains(c.Detail, "connecting to the vault\nthe vault refused [REDACTED]") {
				stderrs++
			}
		}
		if stderrs != 1 {
			t.Errorf("attempt_failed without the stderr tail in its chain: %s", sc.Text())
		}
	}
	if failed == 0 {
		t.Fatal("no attempt_failed event in the trace")
	}

	for _, args := range [][]string{{"runs", "show", res.RunID}, {"runs", "why", res.RunID, "fetch"}} {
		code, out, stderr = cli(t, append(args, "--db", db)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, stderr)
		}
		for _, want := range []string{"failed attempts:", "fetch attempt=1 (business)", "*fault.Error [business]", "stderr:\n", "| the vault refused [REDACTED]"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v does not say %q:\n%s", args, want, out)
			}
		}
		if strings.Contains(out, secret) {
			t.Errorf("%v prints the secret:\n%s", args, out)
		}
	}
}

// The flaky-tool example shows it: runs why news lists its failed attempt
// with the broken source's stderr.
func TestFlakyToolChain(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "rein.db")
	if code, out, stderr := cli(t, "run", "../../examples/flaky-tool", "--db", db); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := cli(t, "runs", "why", "last", "news", "--db", db)
	if code != exitOK {
		t.Fatalf("why: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"news attempt=1 (business)", "stderr:\n", "| service unavailable for this symbol", "stderr: (detail)"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs why news does not say %q:\n%s", want, out)
		}
	}
}
