//go:build linux

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestAgentInterruptLeavesTheRunResumable: SIGTERM or Ctrl-C on rein agent
// and rein chat stops the process, not the run, as on rein run: exit 130
// (not 2 with "context canceled" and a usage hint), the command that
// resumes the run on stderr, and a resume then finishes the run.
func TestAgentInterruptLeavesTheRunResumable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		{"agent SIGTERM", syscall.SIGTERM, []string{"agent", ".", "call slow"}},
		{"chat SIGINT", syscall.SIGINT, []string{"chat", ".", "--session", "s1", "--message", "call slow"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newProcFixture(t, true)
			for name, body := range map[string]string{
				"agent.yaml": "name: slowagent\nmodel: m\ninstructions: Call slow, then answer.\ntools:\n  slow:\n",
				"rein.yaml":  "tools:\n  slow: {command: [\"sh\", \"./slow.sh\"], effect: read, idempotent: true}\n",
				"script.yaml": `replies:
  - {step: agent, decision: agent, turn: 1, tool_calls: [{name: slow, args: {}}]}
  - {step: agent, decision: agent, turn: 2, raw: "done"}
`,
			} {
				if err := os.WriteFile(filepath.Join(f.dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Remove(filepath.Join(f.dir, "flow.yaml")); err != nil {
				t.Fatal(err)
			}
			cmd, stdout, stderr := f.start(append(tt.args, "--db", f.db)...)
			f.pid("leader.pid")
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			if code := exitCodeOf(t, cmd); code != exitInterrupted {
				t.Fatalf("exit %d, want 130\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			m := regexp.MustCompile(`rein runs resume (\S+) --db `).FindStringSubmatch(stderr.String())
			if m == nil || strings.Contains(stderr.String(), "context canceled") || strings.Contains(stderr.String(), "rein help") {
				t.Fatalf("stderr does not say how to resume, or reads as a usage error:\n%s", stderr)
			}
			if code, out, errs := f.cli("runs", "resume", m[1]); code != exitOK || !strings.Contains(out, "succeeded") {
				t.Fatalf("resume: exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
}
