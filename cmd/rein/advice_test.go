package main

import (
	"strings"
	"testing"
)

// TestFlagAdviceComesFromTheCLI: the library's errors name no flag; the
// CLI adds the flag that fixes them.
func TestFlagAdviceComesFromTheCLI(t *testing.T) {
	t.Parallel()
	reads := writeFlow(t, "name: r\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {x: \"{input.order}\"}}\n")
	sess := writeFlow(t, "name: s\nidempotency: session_workflow_input_hash\ntools:\n  e: {command: [cat], effect: none}\nsteps:\n  - {id: a, tool: e, args: {}}\n")
	for _, c := range []struct {
		args          []string
		library, flag string
	}{
		{[]string{"run", reads}, "missing field order (the flow's templates read order); nothing ran", "rein: pass the input with --input FILE (- for stdin) or --input-json JSON"},
		{[]string{"run", sess}, "start it with a session id (RunOptions.Session)", "rein: pass a session id with --session ID"},
	} {
		code, _, stderr := cli(t, c.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != exitUsage || len(lines) < 2 || !strings.Contains(lines[len(lines)-2], c.library) || strings.Contains(lines[len(lines)-2], "--") ||
			lines[len(lines)-1] != c.flag {
			t.Errorf("%v: exit %d\n%s", c.args, code, stderr)
		}
	}
}
