package project

import (
	"os"
	"path/filepath"
	"testing"
)

// A Cache keeps a folder's parsed rein.yaml while the rein.yaml and every
// schema file its parse read (or looked for) read the same, and parses it
// again when one changed, appeared or went.
func TestCacheKeepsParsedConfigByFileContents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("flow.yaml", "name: f\nsteps:\n  - {id: a, tool: t, args: {}}\n")
	write("rein.yaml", "tools:\n  t: {command: [echo, hi], effect: none, input_schema: in}\n")
	write("in.json", `{"type": "object"}`)
	c := NewCache(0)
	cfgPath := filepath.Join(dir, "rein.yaml")
	load := func() any {
		t.Helper()
		p, err := Load(filepath.Join(dir, "flow.yaml"), &LoadOptions{Cache: c})
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		c.mu.Lock()
		defer c.mu.Unlock()
		e := c.cfgs[cfgPath]
		if e == nil {
			t.Fatalf("no parsed rein.yaml kept for %s", cfgPath)
		}
		return e.cfg
	}
	first := load()
	if again := load(); again != first {
		t.Fatal("the same files parsed again: want the kept rein.yaml")
	}
	write("in.json", `{"type": "object", "description": "v2"}`)
	changed := load()
	if changed == first {
		t.Fatal("a schema file the rein.yaml names changed, and the kept rein.yaml was used")
	}
	write("schemas/in.json", `{"type": "object"}`) // found first now (schemas/<name>.json)
	if load() == changed {
		t.Fatal("a schema file appeared where the parse looked first, and the kept rein.yaml was used")
	}
	write("rein.yaml", "tools:\n  t: {command: [echo, bye], effect: none, input_schema: in}\n")
	p, err := Load(filepath.Join(dir, "flow.yaml"), &LoadOptions{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c.mu.Lock()
	cmd := c.cfgs[cfgPath].cfg.Tools["t"].Command
	c.mu.Unlock()
	if len(cmd) != 2 || cmd[1] != "bye" {
		t.Fatalf("tool command %v after rein.yaml changed, want [echo bye]", cmd)
	}
}
