package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A token is printed once and stored as its hash: list never shows it,
// and revoke removes it.
func TestServeTokenCommands(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	code, out, stderr := cli(t, "serve", "token", "create", "--tokens", path, "--tenant", "acme", "--scopes", "run,approve", "--name", "alice")
	secret := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(secret, "rein_") || len(secret) < 40 {
		t.Fatalf("create: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), secret) || !strings.Contains(string(stored), `"alice"`) {
		t.Errorf("the tokens file holds the token, or not its entry:\n%s", stored)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("tokens file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	code, out, _ = cli(t, "serve", "token", "list", "--tokens", path)
	if code != 0 || !strings.Contains(out, "alice") || !strings.Contains(out, "acme") || !strings.Contains(out, "run,approve") || strings.Contains(out, secret) {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"--tenant", "acme", "--scopes", "run", "--name", "alice"},   // taken
		{"--tenant", "acme", "--scopes", "root", "--name", "bob"},    // no such scope
		{"--tenant", "a/b", "--scopes", "read", "--name", "bob"},     // bad tenant
		{"--tenant", "acme", "--scopes", "read", "--name", "bob xy"}, // bad name
		{"--tenant", "acme", "--name", "bob"},                        // no scopes
	} {
		if code, _, stderr := cli(t, append([]string{"serve", "token", "create", "--tokens", path}, bad...)...); code != exitUsage || stderr == "" {
			t.Errorf("create %v: exit %d, want %d (%s)", bad, code, exitUsage, stderr)
		}
	}
	if code, out, _ := cli(t, "serve", "token", "revoke", "--tokens", path, "alice"); code != 0 || !strings.Contains(out, "revoked token alice") {
		t.Errorf("revoke: exit %d %s", code, out)
	}
	if code, _, stderr := cli(t, "serve", "token", "revoke", "--tokens", path, "alice"); code != exitUsage || !strings.Contains(stderr, "no token named alice") {
		t.Errorf("revoke again: exit %d %s", code, stderr)
	}
	if _, out, _ := cli(t, "serve", "token", "list", "--tokens", path); strings.Contains(out, "alice") {
		t.Errorf("list after revoke: %s", out)
	}
}

func TestServeLoopbackWithoutTokens(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:7420": "127.0.0.1:7420", "0.0.0.0:80": "127.0.0.1:80", ":9": "127.0.0.1:9",
		"localhost:1": "127.0.0.1:1", "[::1]:5": "[::1]:5"} {
		if got, err := loopback(in); err != nil || got != want {
			t.Errorf("loopback(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"10.1.2.3:80", "example.com:80", "nope"} {
		if got, err := loopback(in); err == nil {
			t.Errorf("loopback(%s) = %s, want an error", in, got)
		}
	}
	code, _, stderr := cli(t, "serve", "../../examples/refund", "--db", filepath.Join(t.TempDir(), "r.db"), "--addr", "10.1.2.3:0",
		"--tokens", filepath.Join(t.TempDir(), "none.json"))
	if code != exitUsage || !strings.Contains(stderr, "loopback only") {
		t.Errorf("serve on 10.1.2.3 without tokens: exit %d\n%s", code, stderr)
	}
}
