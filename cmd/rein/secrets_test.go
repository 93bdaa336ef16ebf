package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key rein holds never reaches a tool it was not passed to, and a tool
// that was given it and prints it (as is, lowercased, %-escaped) on stderr
// before failing leaves no trace of it: not in rein run's output, not in
// runs show, not in the JSONL trace, not in the database's bytes.
func TestSecretsNeverLeaveTheProcess(t *testing.T) {
	// Not parallel: it sets an environment variable.
	const key = "sk-Test/Secret+Key=0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", key)
	dir := t.TempDir()
	path := filepath.Join(dir, "flow.yaml")
	flowText := `name: leaky
tools:
  peek:
    command: ["sh", "-c", "cat >/dev/null; echo \"{\\\"saw\\\": \\\"${OPENAI_API_KEY:-nothing}\\\"}\""]
    effect: none
  leak:
    command: ["sh", "-c", "cat >/dev/null; echo \"auth failed: $OPENAI_API_KEY\" >&2; echo \"$OPENAI_API_KEY\" | tr A-Z a-z >&2; echo \"$OPENAI_API_KEY\" | sed 's|/|%2F|g; s|+|%2B|g; s|=|%3D|g' >&2; exit 3"]
    effect: none
    pass_env: [OPENAI_API_KEY]
steps:
  - {id: peek, tool: peek, args: {}}
  - {id: leak, tool: leak, args: {}}
`
	if err := os.WriteFile(path, []byte(flowText), 0o644); err != nil {
		t.Fatal(err)
	}
	db, tracePath := filepath.Join(dir, "rein.db"), filepath.Join(dir, "trace.jsonl")
	code, out, stderr := cli(t, "run", path, "--db", db, "--trace", tracePath, "--output", "json")
	if code != exitRunFailed {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	var res durableResult
	decodeOne(t, out, &res)
	if saw := res.Outputs["peek"]["saw"]; saw != "nothing" {
		t.Errorf("a tool without pass_env saw OPENAI_API_KEY: %v", saw)
	}
	if res.Error == nil || !strings.Contains(res.Error.Message, "auth failed: [REDACTED]") {
		t.Errorf("the run's error does not show the redacted stderr: %+v", res.Error)
	}
	_, shown, showErr := cli(t, "runs", "show", res.RunID, "--db", db)
	_, shownJSON, _ := cli(t, "runs", "show", res.RunID, "--db", db, "--output", "json")
	_, traced, _ := cli(t, "runs", "trace", res.RunID, "--db", db)
	places := map[string]string{"rein run stdout": out, "rein run stderr": stderr, "runs show": shown + showErr,
		"runs show --output json": shownJSON, "runs trace": traced}
	for _, f := range []string{tracePath, db, db + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		places[filepath.Base(f)] = string(b)
	}
	if !strings.Contains(shown, "[REDACTED]") {
		t.Errorf("runs show does not show the redacted error:\n%s", shown)
	}
	for where, text := range places {
		low := strings.ToLower(text)
		for _, form := range []string{key, url.QueryEscape(key)} {
			if strings.Contains(low, strings.ToLower(form)) {
				t.Errorf("%s holds the key (as %q)", where, form)
			}
		}
	}
}

// A DSN's password, in any of its forms, is not printed by a command that
// fails to open the store or by the worker's log.
func TestDSNPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://rein:pw-in-userinfo-1@127.0.0.1:1/rein?connect_timeout=1",
		"postgres://rein@127.0.0.1:1/rein?password=pw-in-query-2&connect_timeout=1",
		"postgresql://rein@127.0.0.1:1/rein?sslpassword=pw-in-sslpassword-3&connect_timeout=1&sslmode=disable",
	} {
		for _, args := range [][]string{{"runs", "list"}, {"worker", "--concurrency", "1"}} {
			code, out, stderr := cli(t, append(args, "--db", dsn)...)
			if code == exitOK {
				t.Errorf("%v with an unreachable store: exit 0", args)
			}
			for _, pw := range []string{"pw-in-userinfo-1", "pw-in-query-2", "pw-in-sslpassword-3"} {
				if strings.Contains(out+stderr, pw) {
					t.Errorf("rein %v --db %s printed its password:\n%s%s", args, dsn, out, stderr)
				}
			}
		}
	}
}

// What rein prints on stdout goes through the redactor too: a tool that
// was passed the key and returns it in its output does not get it shown.
func TestStdoutIsRedacted(t *testing.T) {
	// Not parallel: it sets an environment variable.
	const key = "sk-Test-Printed-Key-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", key)
	path := writeFlow(t, `name: echo
tools:
  echo:
    command: ["sh", "-c", "cat >/dev/null; echo \"{\\\"key\\\": \\\"$OPENAI_API_KEY\\\"}\""]
    effect: none
    pass_env: [OPENAI_API_KEY]
steps:
  - {id: echo, tool: echo, args: {}}
`)
	for _, format := range []string{"json", "text"} {
		code, out, stderr := cli(t, "run", path, "--output", format)
		if code != exitOK || strings.Contains(out+stderr, key) || !strings.Contains(out, "[REDACTED]") {
			t.Errorf("--output %s: exit %d\nstdout: %s\nstderr: %s", format, code, out, stderr)
		}
	}
}
