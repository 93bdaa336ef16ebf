package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A step whose output contradicts its premise stops the run first: the
// step waits for a person (exit 3) with a message naming the premise and
// the remediation on offer, nothing that depends on it runs — even with
// on_error: retry it is not retried — and rein runs impact answers for it.
func TestPremiseStopsFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved.json")
	flowText := `name: premised
tools:
  lookup:
    command: ["sh", "-c", "cat >/dev/null; echo x >> ` + filepath.Join(dir, "lookups") + `; echo '{\"region\": \"\"}'"]
    effect: read
  save:
    command: ["sh", "-c", "cat > ` + saved + `; echo '{\"ok\": true}'"]
    effect: write
steps:
  - id: lookup
    tool: lookup
    args: {}
    retries: 2
    on_error: retry
    premise: {id: region-known, claim: "the registry knows the customer's region", check: 'output.region != ""'}
  - {id: save, tool: save, args: {region: "{lookup.region}"}}
`
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flowText), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "rein.db")
	code, out, stderr := cli(t, "run", dir, "--db", db, "--output", "json")
	if code != exitWaiting {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, stderr)
	}
	var res durableResult
	decodeOne(t, out, &res)
	if _, err := os.Stat(saved); !os.IsNotExist(err) {
		t.Errorf("save ran after the premise failed (%v)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "lookups")); strings.Count(string(b), "x") != 1 {
		t.Errorf("lookup ran %d times, want once: a failed premise is not retried", strings.Count(string(b), "x"))
	}
	code, out, stderr = cli(t, "runs", "show", res.RunID, "--db", db)
	for _, want := range []string{"premise region-known (\"the registry knows the customer's region\") does not hold on the output of step lookup",
		"rein runs impact " + res.RunID + " --premise lookup", "rein runs remediate " + res.RunID + " --premise lookup"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("runs show does not say %q (exit %d):\n%s%s", want, code, out, stderr)
		}
	}
	if code, out, stderr = cli(t, "runs", "impact", res.RunID, "--premise", "lookup", "--db", db); code != exitOK || !strings.Contains(out, "lookup") {
		t.Errorf("runs impact: exit %d\n%s%s", code, out, stderr)
	}
}
