package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRefundCheckReconcilesAKilledRun: examples/refund-check, run by the
// built binary, which is killed (SIGKILL) once the refund is in the ledger
// and before its settlement is journaled. rein runs resume asks the tool's
// check, which finds the refund by its idempotency key: the call is
// reconciled without a person, the run succeeds with the refund the
// ledger holds, and the ledger has exactly one refund. rein runs show says
// the call was reconciled, in text and JSON.
func TestRefundCheckReconcilesAKilledRun(t *testing.T) {
	t.Parallel()
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "refund-check")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "examples", "refund-check"))); err != nil {
		t.Fatal(err)
	}
	db, ledger, hold := filepath.Join(root, "rein.db"), filepath.Join(root, "ledger"), filepath.Join(root, "sent")
	cmd := exec.Command(bin, "run", dir, "--input-json", `{"order": "A-1042", "amount": 240}`, "--db", db, "-o", "json")
	cmd.Env = append(os.Environ(), "REIN_LEDGER="+ledger, "REFUND_HOLD="+hold)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// a minute bounds a hung tool; no speed is counted on.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(hold); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("send_refund never wrote its refund")
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	resume := exec.Command(bin, "runs", "resume", "last", "--db", db, "-o", "json")
	resume.Env = append(os.Environ(), "REIN_LEDGER="+ledger)
	var stdout, errb strings.Builder
	resume.Stdout, resume.Stderr = &stdout, &errb
	code := exitOK
	if err := resume.Run(); err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
	}
	out, stderr := stdout.String(), errb.String()
	var res durableResult
	decodeOne(t, out, &res)
	lines := strings.Split(strings.TrimSpace(readFile(t, ledger)), "\n")
	if code != exitOK || res.Status != "succeeded" {
		t.Fatalf("resume: exit %d %+v\n%s\nledger: %v", code, res, stderr, lines)
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], res.RunID+"/refund/1 A-1042 240") {
		t.Fatalf("ledger %q: want one refund, key %s/refund/1", lines, res.RunID)
	}
	if got := res.Outputs["receipt"]; got["refund"] != res.RunID+"/refund/1" || got["amount"] != 240.0 {
		t.Fatalf("receipt %v: want the refund the check found", got)
	}
	code, out, _ = cli(t, "runs", "show", res.RunID, "--db", db)
	if code != exitOK || !strings.Contains(out, "succeeded (reconciled by check: happened)") {
		t.Fatalf("runs show does not say the refund was reconciled: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "runs", "show", res.RunID, "--db", db, "-o", "json")
	var v struct {
		Calls []struct {
			StepID     string `json:"step_id"`
			Reconciled string `json:"reconciled"`
		}
	}
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil {
		t.Fatalf("runs show -o json: exit %d %v", code, err)
	}
	if len(v.Calls) != 1 || v.Calls[0].StepID != "refund" || v.Calls[0].Reconciled != "check: happened" {
		t.Fatalf("runs show -o json calls %+v", v.Calls)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
