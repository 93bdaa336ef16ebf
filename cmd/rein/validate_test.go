package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateChecksToolCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"flow.yaml": `name: tools
tools:
  gone:     {command: ["./tools/gone.sh"], effect: none}
  notexec:  {command: ["./tools/plain.sh", "--flag"], effect: none}
  folder:   {command: ./tools, effect: none}
  nowhere:  {command: [rein-no-such-program-on-path], effect: none}
  fine:     {command: ["./tools/ok.sh"], effect: none}
  onpath:   {command: [sh, -c, "echo {}"], effect: none}
steps:
  - {id: a, tool: fine, args: {}}
`,
		"rein.yaml": "tools:\n  shared:\n    command: [\"./bin/shared\"]\n    effect: none\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"ok.sh": 0o755, "plain.sh": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, "tools", name), []byte("#!/bin/sh\necho {}\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr := cli(t, "validate", dir)
	if code != exitUsage || out != "" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, stderr)
	}
	flowFile, config := filepath.Join(dir, "flow.yaml"), filepath.Join(dir, "rein.yaml")
	for _, want := range []string{
		flowFile + `:3:24: tool gone: command "./tools/gone.sh" not found: tried ` + filepath.Join(dir, "tools/gone.sh"),
		flowFile + `:4:24: tool notexec: command "./tools/plain.sh" is not executable`,
		flowFile + `:5:23: tool folder: command "./tools" is a directory`,
		flowFile + `:6:24: tool nowhere: command "rein-no-such-program-on-path" not found in PATH`,
		config + `:3:15: tool shared: command "./bin/shared" not found`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, ok := range []string{"tool fine", "tool onpath"} {
		if strings.Contains(stderr, ok) {
			t.Errorf("%s is in place, yet reported:\n%s", ok, stderr)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tools", "plain.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, stderr = cli(t, "validate", dir); strings.Contains(stderr, "tool notexec") {
		t.Errorf("chmod +x did not fix notexec:\n%s", stderr)
	}
}

// TestValidateExamples: every example validates, with no warning.
func TestValidateExamples(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil || len(dirs) == 0 {
		t.Fatal(dirs, err)
	}
	for _, dir := range dirs {
		code, out, stderr := cli(t, "validate", dir)
		if code != exitOK || !strings.Contains(out, ": ok (") || stderr != "" {
			t.Errorf("validate %s: exit %d\n%s%s", dir, code, out, stderr)
		}
	}
}
