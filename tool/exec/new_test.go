package exec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/tool"
)

func TestNewRejects(t *testing.T) {
	t.Parallel()
	valid := func() Config {
		return Config{Name: "send", Command: []string{"./send.sh"}, Effect: tool.EffectExternal}
	}
	tests := []struct {
		name string
		edit func(*Config)
		want []string // the error's lines, exactly
	}{
		{"no name", func(c *Config) { c.Name = "" }, []string{`exec tool "": name is required`}},
		{"no command", func(c *Config) { c.Command = nil }, []string{`exec tool "send": command is required (a program and its arguments, e.g. ["./tools/send.sh", "--dry-run"])`}},
		{"empty program", func(c *Config) { c.Command = []string{""} }, []string{`exec tool "send": command is required (a program and its arguments, e.g. ["./tools/send.sh", "--dry-run"])`}},
		{"no effect", func(c *Config) { c.Effect = "" }, []string{`exec tool "send": effect is required: none, read, write, external or destructive`}},
		{"bad effect", func(c *Config) { c.Effect = "nuclear" }, []string{`exec tool "send": unknown effect "nuclear": want none, read, write, external or destructive`}},
		{"bad reversibility", func(c *Config) { c.Reversibility = "maybe" }, []string{`exec tool "send": unknown reversibility "maybe": want reversible, compensatable or irreversible`}},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, []string{`exec tool "send": timeout -1s is negative`}},
		{"negative cap", func(c *Config) { c.MaxOutputBytes = -1 }, []string{`exec tool "send": max output bytes -1 is negative`}},
		{"env", func(c *Config) { c.Env = map[string]string{"A=B": "x", "REIN_STEP_ID": "s", "OK": "a\x00b"} }, []string{
			`exec tool "send": env key "A=B" is not a variable name`,
			`exec tool "send": env OK holds a NUL byte`,
			`exec tool "send": env key REIN_STEP_ID is reserved: rein sets it for every call`,
		}},
		{"schemas", func(c *Config) { c.InputSchema = json.RawMessage("{"); c.OutputSchema = json.RawMessage("nope") }, []string{
			`exec tool "send": input schema is not valid JSON`,
			`exec tool "send": output schema is not valid JSON`,
		}},
		{"everything at once", func(c *Config) { c.Command = nil; c.Effect = ""; c.Timeout = -1 }, []string{
			`exec tool "send": command is required (a program and its arguments, e.g. ["./tools/send.sh", "--dry-run"])`,
			`exec tool "send": effect is required: none, read, write, external or destructive`,
			`exec tool "send": timeout -1ns is negative`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid()
			tt.edit(&cfg)
			tl, err := New(cfg)
			if err == nil {
				t.Fatalf("New = %v, want an error", tl)
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("error lines\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestNewSpecAndDefaults(t *testing.T) {
	t.Parallel()
	in := json.RawMessage(`{"type":"object"}`)
	out := json.RawMessage(`{"type":"object","properties":{"sent":{"type":"boolean"}}}`)
	cfg := Config{
		Name: "send_email", Description: "Sends an email.", Command: []string{"./send.sh", "--fast"},
		Dir: "testdata-relative", Env: map[string]string{"K": "v"}, Timeout: 10 * time.Second,
		Effect: tool.EffectExternal, Reversibility: tool.Irreversible, Idempotent: true,
		InputSchema: in, OutputSchema: out,
	}
	tl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := tool.Spec{
		Name: "send_email", Description: "Sends an email.", InputSchema: in, OutputSchema: out,
		Effect: tool.EffectExternal, Reversibility: tool.Irreversible, Idempotent: true,
	}
	if got := tl.Spec(); !reflect.DeepEqual(got, want) {
		t.Errorf("Spec() = %+v, want %+v", got, want)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if tl.cfg.Dir != filepath.Join(wd, "testdata-relative") || tl.cfg.MaxOutputBytes != DefaultMaxOutputBytes {
		t.Errorf("dir %q, cap %d; want %q, %d", tl.cfg.Dir, tl.cfg.MaxOutputBytes, filepath.Join(wd, "testdata-relative"), DefaultMaxOutputBytes)
	}
	// New copies what it keeps: later edits to cfg do not reach the tool.
	cfg.Command[0], cfg.Env["K"] = "./other.sh", "changed"
	if tl.cfg.Command[0] != "./send.sh" || tl.cfg.Env["K"] != "v" {
		t.Errorf("tool shares cfg's slices or maps: %v %v", tl.cfg.Command, tl.cfg.Env)
	}
}
