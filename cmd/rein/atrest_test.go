package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// atRestFolder writes a flow whose fetch step returns the secret of
// DEMO_API_TOKEN, an approval, and a use step that writes the args it gets
// to use.json; with a key, rein.yaml names it (encryption:).
func atRestFolder(t *testing.T, withKey bool) (dir, keyText string) {
	t.Helper()
	dir = t.TempDir()
	use := filepath.Join(dir, "use.json")
	flowText := `name: atrest
tools:
  fetch:
    command: ["sh", "-c", "cat >/dev/null; printf '{\"token\": \"%s\", \"user\": \"ann\"}' \"$DEMO_API_TOKEN\""]
    effect: read
    idempotent: true
    pass_env: [DEMO_API_TOKEN]
  use:
    command: ["sh", "-c", "cat > ` + use + `; echo '{\"ok\": true}'"]
    effect: write
steps:
  - {id: fetch, tool: fetch, args: {}}
  - {id: ok, type: approval, requires: [fetch]}
  - {id: use, tool: use, args: {token: "{fetch.token}"}, requires: [ok]}
`
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flowText), 0o644); err != nil {
		t.Fatal(err)
	}
	if withKey {
		keyText = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
		if err := os.WriteFile(filepath.Join(dir, "rein.key"), []byte(keyText+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "rein.yaml"), []byte("encryption: {key_id: k1, key_file: rein.key}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, keyText
}

// With rein.yaml encryption:, a run resumed after an approval hands a later
// step the secret an earlier step returned, as the live run would have,
// while the database, runs show and the trace never hold it in clear; and
// once the key is gone from rein.yaml, the resume is refused, naming it.
func TestEncryptedPayloadsResumeAsLive(t *testing.T) {
	// Not parallel: it sets an environment variable.
	const token = "demo-token-5b9e1c7d2a"
	t.Setenv("DEMO_API_TOKEN", token)
	dir, keyText := atRestFolder(t, true)
	db := filepath.Join(dir, "rein.db")
	code, out, stderr := cli(t, "run", dir, "--db", db, "--output", "json")
	if code != exitWaiting {
		t.Fatalf("exit %d, want 3\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	var res durableResult
	decodeOne(t, out, &res)
	if strings.Contains(stderr, "may hold a secret") {
		t.Errorf("a warning about redacted outputs with a key configured:\n%s", stderr)
	}
	code, out, stderr = cli(t, "runs", "approve", res.RunID, "ok", "--db", db, "--config", filepath.Join(dir, "rein.yaml"))
	if code != exitOK {
		t.Fatalf("approve: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	got, err := os.ReadFile(filepath.Join(dir, "use.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), token) {
		t.Fatalf("the resumed run handed use %s, want the token fetch returned", got)
	}
	_, shown, _ := cli(t, "runs", "show", res.RunID, "--db", db)
	_, shownJSON, _ := cli(t, "runs", "show", res.RunID, "--db", db, "--output", "json")
	_, traced, _ := cli(t, "runs", "trace", res.RunID, "--db", db, "--jsonl")
	if !strings.Contains(shownJSON, "[REDACTED]") {
		t.Errorf("runs show -o json does not show fetch's token redacted:\n%s", shownJSON)
	}
	places := map[string]string{"runs show": shown, "runs show -o json": shownJSON, "runs trace --jsonl": traced, "approve": out + stderr}
	for _, f := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		places[filepath.Base(f)] = string(b)
	}
	for where, text := range places {
		for _, leak := range []string{token, keyText} {
			if strings.Contains(text, leak) {
				t.Errorf("%s holds %q in clear", where, leak)
			}
		}
	}

	// a second run waits; the key is then removed from rein.yaml.
	code, out, _ = cli(t, "run", dir, "--db", db, "--output", "json")
	if code != exitWaiting {
		t.Fatalf("second run: exit %d", code)
	}
	decodeOne(t, out, &res)
	if err := os.WriteFile(filepath.Join(dir, "rein.yaml"), []byte("secrets: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(db + "-wal")
	code, out, stderr = cli(t, "runs", "resume", res.RunID, "--db", db)
	if code != exitUsage {
		t.Fatalf("resume without the key: exit %d, want 2\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	for _, want := range []string{res.RunID, "key k1", "old_keys", "rein runs resume " + res.RunID} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, stderr)
		}
	}
	if after, _ := os.ReadFile(db + "-wal"); !bytes.Equal(before, after) {
		t.Error("the refused resume wrote to the store")
	}
	// a decision is recorded; the resume after it is refused the same way.
	code, out, stderr = cli(t, "runs", "approve", res.RunID, "ok", "--db", db)
	if code != exitWaiting || !strings.Contains(stderr, "key k1") || !strings.Contains(stderr, "rein runs resume "+res.RunID) {
		t.Fatalf("approve without the key: exit %d, want 3 naming the key\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	if _, shown, _ := cli(t, "runs", "show", res.RunID, "--db", db, "--output", "json"); !strings.Contains(shown, `"approved"`) {
		t.Errorf("the decision was not recorded:\n%s", shown)
	}
}

// Without encryption:, rein validate and rein run name the steps whose
// output may hold a secret and that later steps read.
func TestRedactedOutputsWarnAtLoad(t *testing.T) {
	t.Parallel()
	dir, _ := atRestFolder(t, false)
	code, out, stderr := cli(t, "validate", dir)
	if code != exitOK {
		t.Fatalf("validate: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"flow.yaml:", "warning: step fetch:", "DEMO_API_TOKEN", "steps ok, use run after it", "encryption:"} {
		if !strings.Contains(out+stderr, want) {
			t.Errorf("validate does not say %q:\n%s%s", want, out, stderr)
		}
	}
}

// With rein.yaml encryption:, what a person writes into a run (a settle's
// --value, an approval's --comment) that holds a secret is sealed, not
// only redacted: the resumed run hands a later step the values as written,
// while the database never holds them in clear.
func TestEncryptedDecisionsResumeAsWritten(t *testing.T) {
	// Not parallel: it sets an environment variable.
	const token, note = "settled-token-8c1f0e4b", "note-token-2d7a9b3e"
	t.Setenv("DEMO_API_TOKEN", token)
	t.Setenv("DEMO_NOTE_TOKEN", note)
	dir, _ := atRestFolder(t, true)
	use := filepath.Join(dir, "use.json")
	flowText := `name: decided
tools:
  fetch:
    command: ["sh", "-c", "cat >/dev/null; echo 'the vault is down' >&2; exit 3"]
    effect: read
  use:
    command: ["sh", "-c", "cat > ` + use + `; echo '{\"ok\": true}'"]
    effect: write
steps:
  - {id: fetch, tool: fetch, args: {}, on_error: escalate}
  - {id: ok, type: approval, requires: [fetch]}
  - {id: use, tool: use, args: {token: "{fetch.token}", note: "{ok.comment}"}, requires: [ok]}
`
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flowText), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "rein.db")
	code, out, stderr := cli(t, "run", dir, "--db", db, "--output", "json")
	if code != exitWaiting {
		t.Fatalf("exit %d, want 3\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	var res durableResult
	decodeOne(t, out, &res)
	code, out, stderr = cli(t, "runs", "settle", res.RunID, "fetch", "--value", `{"token": "`+token+`"}`, "--db", db)
	if code != exitWaiting {
		t.Fatalf("settle: exit %d, want 3 (the approval waits)\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	code, out, stderr = cli(t, "runs", "approve", res.RunID, "ok", "--comment", "use "+note, "--db", db)
	if code != exitOK {
		t.Fatalf("approve: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	got, err := os.ReadFile(use)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{token, "use " + note} {
		if !strings.Contains(string(got), want) {
			t.Errorf("the resumed run handed use %s, want %q as the person wrote it", got, want)
		}
	}
	for _, f := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, leak := range []string{token, note} {
			if bytes.Contains(b, []byte(leak)) {
				t.Errorf("%s holds %q in clear", filepath.Base(f), leak)
			}
		}
	}
}
