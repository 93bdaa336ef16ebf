package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagAdviceComesFromTheCLI: the library's errors name no flag; the
// CLI adds the flag that fixes them.
func TestFlagAdviceComesFromTheCLI(t *testing.T) {
	t.Parallel()
	reads := writeFlow(t, "name: r\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {x: \"{input.order}\"}}\n")
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sess := writeFlow(t, "name: s\nidempotency: session_workflow_input_hash\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {}}\n")
	for _, c := range []struct {
		args          []string
		library, flag string
	}{
		{[]string{"run", reads}, "missing field order (the flow's templates read order); nothing ran", "rein: pass the input with --input FILE (- for stdin) or --input-json JSON"},
		{[]string{"run", sess}, "start it with a session id (RunOptions.Session)", "rein: pass a session id with --session ID"},
		{[]string{"run", reads, "--replay", empty}, "is empty: record the cassette again", "rein: record it with --record FILE (and a model that answers: rein.yaml models:, or --model)"},
	} {
		code, _, stderr := cli(t, c.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != exitUsage || len(lines) < 2 || !strings.Contains(lines[len(lines)-2], c.library) || strings.Contains(lines[len(lines)-2], "--") ||
			lines[len(lines)-1] != c.flag {
			t.Errorf("%v: exit %d\n%s", c.args, code, stderr)
		}
	}
}
