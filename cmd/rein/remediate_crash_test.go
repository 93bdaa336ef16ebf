package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// remediateConfig: book (compensated by refund), refund (appends its key
// and args to the ledger, and blocks for ref a while <ledger>.block
// exists), src (reads nothing, the premise).
const remediateConfig = `tools:
  src:
    command: ["sh", "-c", "cat > /dev/null; echo '{\"ok\": true}'"]
    effect: none
    idempotent: true
  book:
    command: ["sh", "-c", "cat > /dev/null; echo '{\"ok\": true}'"]
    effect: write
    reversibility: compensatable
    compensate: {tool: refund, args: {ref: "{args.ref}"}}
  refund:
    command: ["sh", "-c", %q, %q]
    effect: external
`

const remediateRefund = `in=$(cat); printf '%s %s\n' "$REIN_IDEMPOTENCY_KEY" "$in" >> "$0"
case "$in" in *'"a"'*) if [ -e "$0.block" ]; then sleep 60; fi;; esac
echo '{"ok": true}'`

// TestRemediateKilledMidCallResume: rein runs remediate is killed
// (SIGKILL) while the second compensation (refund a) runs, after it made
// its effect. The run stays succeeded; rein runs resume does not carry a
// remediation on, and its error says so and names the command that does,
// with the premise and the call in doubt. That command then keeps the
// compensation that settled (refund b, not made again) and escalates the
// one in doubt (refund is not idempotent and has no check) instead of
// making it again: each refund is in the ledger once.
func TestRemediateKilledMidCallResume(t *testing.T) {
	t.Parallel()
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, ledger := filepath.Join(dir, "rein.db"), filepath.Join(dir, "ledger")
	files := map[string]string{
		"rein.yaml": fmt.Sprintf(remediateConfig, remediateRefund, ledger),
		"flow.yaml": "name: booked\nsteps:\n  - {id: src, tool: src, args: {}}\n" +
			"  - {id: book, tool: book, args: {ref: a, from: \"{src.ok}\"}}\n  - {id: book2, tool: book, args: {ref: b, from: \"{src.ok}\"}, requires: [book]}\n",
		"ledger.block": "",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := cli(t, "run", dir, "--db", db); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	_, out, _ := cli(t, "runs", "list", "--db", db, "-o", "json")
	var listed []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 {
		t.Fatalf("runs list: %v\n%s", err, out)
	}
	id := listed[0].ID

	cmd := exec.Command(bin, "runs", "remediate", id, "--premise", "src", "--db", db)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// a minute bounds a hung tool; no speed is counted on.
	for deadline := time.Now().Add(time.Minute); len(ledgerLines(t, ledger)) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the compensations did not run: %q", ledgerLines(t, ledger))
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := os.Remove(filepath.Join(dir, "ledger.block")); err != nil {
		t.Fatal(err)
	}

	code, _, stderr := cli(t, "runs", "resume", id, "--db", db)
	want := "run rein runs remediate " + id + " --premise src again"
	if code != exitRunFailed || !strings.Contains(stderr, want) || !strings.Contains(stderr, id+"/book/1/compensate dispatched") {
		t.Fatalf("resume: exit %d\n%s\nwant exit %d, the command (%q) and the call in doubt", code, stderr, exitRunFailed, want)
	}
	code, out, stderr = cli(t, "runs", "remediate", id, "--premise", "src", "--db", db)
	if code != exitWaiting || !strings.Contains(out+stderr, "dispatched and the process stopped") {
		t.Fatalf("remediate again: exit %d, want %d (the compensation in doubt escalated)\n%s\n%s", code, exitWaiting, out, stderr)
	}
	got := ledgerLines(t, ledger)
	if len(got) != 2 || !strings.HasPrefix(got[0], id+"/book2/1/compensate ") || !strings.HasPrefix(got[1], id+"/book/1/compensate ") {
		t.Fatalf("ledger %q: want refund b, then refund a, once each", got)
	}
}
