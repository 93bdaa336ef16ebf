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
	model := writeFlow(t, "name: m\nsteps:\n  - {id: a, model: gpt-4o, prompt_template: hi}\n")
	for _, c := range []struct {
		args          []string
		library, flag string
	}{
		{[]string{"run", reads}, "missing field order (the flow's templates read order); nothing ran", "rein: pass the input with --input FILE (- for stdin) or --input-json JSON"},
		{[]string{"run", sess}, "start it with a session id (RunOptions.Session)", "rein: pass a session id with --session ID"},
		{[]string{"validate", model}, "step a: model gpt-4o is not configured: add it to rein.yaml models: (e.g. {provider: openai, model: gpt-4o-mini}), or answer it with a scripted model (a script.yaml beside the flow)",
			"rein: answer unconfigured models with --model NAME|provider/model, or offline with --script FILE"},
		{[]string{"run", reads, "--replay", empty}, "is empty: record the cassette again", "rein: record it with --record FILE (and a model that answers: rein.yaml models:, or --model)"},
	} {
		code, _, stderr := cli(t, c.args...)
		lib, adv := -1, -1
		for i, line := range strings.Split(stderr, "\n") {
			if strings.Contains(line, c.library) && !strings.Contains(line, "--") {
				lib = i
			}
			if line == c.flag {
				adv = i
			}
		}
		if code != exitUsage || lib < 0 || adv <= lib {
			t.Errorf("%v: exit %d, want the library's message without a flag, then the CLI's advice\n%s", c.args, code, stderr)
		}
	}
}
