package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ownTools is a flow that declares an exec tool of its own.
const ownTools = `name: own_tools
tools:
  hello: {command: [sh, -c, 'cat >/dev/null; echo "{\"said\": \"hi\"}"'], effect: none}
steps:
  - {id: a, tool: hello, args: {}}
`

// TestTrustedToolsOnly checks that --trusted-tools-only refuses a flow that
// declares tools of its own, on run, validate and resume, before anything
// runs; without it the flow runs.
func TestTrustedToolsOnly(t *testing.T) {
	t.Parallel()
	path := writeFlow(t, ownTools)
	db := filepath.Join(t.TempDir(), "runs.db")
	if code, _, stderr := cli(t, "run", path, "--db", db); code != exitOK {
		t.Fatalf("without the flag: exit %d, %s", code, stderr)
	}
	const refused = "the flow declares tools: of its own, and only trusted tools are allowed"
	for _, args := range [][]string{
		{"run", path, "--trusted-tools-only"},
		{"validate", path, "--trusted-tools-only"},
	} {
		code, _, stderr := cli(t, args...)
		if code != exitUsage || !strings.Contains(stderr, ":2:1: "+refused) || strings.Contains(strings.Split(stderr, "\n")[0], "--") ||
			!strings.Contains(stderr, "rein: --trusted-tools-only refuses the tools a flow declares itself") {
			t.Errorf("%v: exit %d, stderr %s", args, code, stderr)
		}
	}
	code, out, stderr := cli(t, "run", path, "--detach", "--db", db)
	if code != exitOK {
		t.Fatalf("--detach: exit %d, %s", code, stderr)
	}
	id := strings.TrimSpace(out)
	code, _, stderr = cli(t, "runs", "resume", id, "--db", db, "--trusted-tools-only")
	if code != exitUsage || !strings.Contains(stderr, refused) {
		t.Errorf("resume: exit %d, stderr %s", code, stderr)
	}
}

// TestInputLimits checks --input: a BOM is accepted, a file past the limit
// is refused naming it.
func TestInputLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFlow(t, "name: echo\nsteps:\n  - {id: a, type: approval, message: \"{input.x}\"}\n")
	bom := filepath.Join(dir, "bom.json")
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(bom, []byte("\xEF\xBB\xBF{\"x\": 1}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, []byte(`"`+strings.Repeat("x", maxInputBytes)+`"`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, "validate", path); code != exitOK {
		t.Fatalf("validate: %d %s", code, stderr)
	}
	if code, _, stderr := cli(t, "run", path, "--input", bom); code == exitUsage {
		t.Errorf("input with a BOM: exit %d, %s", code, stderr)
	}
	code, _, stderr := cli(t, "run", path, "--input", big)
	if code != exitUsage || !strings.Contains(stderr, big+" is 67108866 bytes, more than the 67108864 it may have") {
		t.Errorf("big input: exit %d, %s", code, stderr)
	}
}

// TestControlCharactersAreEscaped checks that what the CLI prints cannot
// carry terminal escape sequences: a file name holding ESC is printed as
// \u001b.
func TestControlCharactersAreEscaped(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a\x1b[2Jb.yaml")
	if err := os.WriteFile(path, []byte("name: x\nsteps: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "validate", path)
	if code != exitUsage || strings.ContainsRune(stderr, 0x1b) || !strings.Contains(stderr, `a\u001b[2Jb.yaml:2:8: steps must be a list`) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain text, Grüße 日本":  "plain text, Grüße 日本",
		"two\nlines\tand a tab": "two\nlines\tand a tab",
		"\x1b[2J\x07\x00\x7f":   `\u001b[2J\u0007\u0000\u007f`,
		"c1 \u0085\u009b":       `c1 \u0085\u009b`,
		"bad \xff byte":         `bad \xff byte`,
		`{"s": "\u001b"}`:       `{"s": "\u001b"}`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
