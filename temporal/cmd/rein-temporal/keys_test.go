package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/temporal"
)

// TestProjectKeys: --project DIR reads the keys of DIR's rein.yaml
// encryption:; a folder naming none is refused, as is codec-server with
// nothing to decode.
func TestProjectKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tools := "tools:\n  echo: {command: [cat], effect: none}\n"
	write("flow.yaml", "name: keyed\nsteps:\n  - {id: a, tool: echo, args: {}}\n")
	write("rein.yaml", tools)
	c := common{project: dir}
	if err := c.loadKeys(); err == nil || !strings.Contains(err.Error(), "names no encryption: key") {
		t.Fatalf("a folder without a key: %v", err)
	}
	write("k7.key", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n")
	write("rein.yaml", tools+"encryption: {key_id: k7, key_file: k7.key}\n")
	c = common{project: dir}
	if err := c.loadKeys(); err != nil || c.keys.KeyID() != "k7" {
		t.Fatalf("--project %s: %v (key %q)", dir, err, c.keys.KeyID())
	}
	// a worker of a flow that declares secrets, without a key, says so once.
	write("rein.yaml", tools+"secrets: [SHOP_TOKEN]\n")
	flows := temporal.NewFlows()
	if err := flows.Load([]string{dir}, nil); err != nil {
		t.Fatal(err)
	}
	keys, err := flows.Keys()
	if err != nil || keys != nil {
		t.Fatalf("keys of a folder naming none: %v %v", keys, err)
	}
	var warned bytes.Buffer
	warnClear(&warned, flows, keys)
	if strings.Count(warned.String(), "keyed declare secrets and no rein.yaml encryption: key") != 1 {
		t.Fatalf("worker warning: %q", warned.String())
	}
	var stderr bytes.Buffer
	if code := Main(context.Background(), []string{"codec-server", "--temporal"}, &bytes.Buffer{}, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "needs --project DIR") {
		t.Fatalf("codec-server with nothing to decode: exit %d: %s", code, stderr.String())
	}
}
