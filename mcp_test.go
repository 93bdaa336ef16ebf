package rein_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
)

// TestMain removes the test MCP server crmServer built.
func TestMain(m *testing.M) {
	code := m.Run()
	if crmDir != "" {
		_ = os.RemoveAll(crmDir)
	}
	os.Exit(code)
}

// crmDir holds the binary crmServer builds.
var crmDir string

// crmServer builds the test MCP server (tool/mcp/testdata/server), a
// real program on the go-sdk's server API, once.
var crmServer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "rein-crm-mcp-")
	if err != nil {
		return "", err
	}
	crmDir = dir
	bin := filepath.Join(dir, "crm")
	if out, err := exec.Command("go", "build", "-o", bin, "./tool/mcp/testdata/server").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// crmProject writes a flow folder whose rein.yaml names the crm server
// and whose one step calls tool with args.
func crmProject(t *testing.T, tools, call, args string) *project.Project {
	t.Helper()
	bin, err := crmServer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("mcp:\n  crm:\n    command: [%q]\n    timeout: 1s\n%s", bin, tools)
	flowText := fmt.Sprintf("name: crm\ninputs: {type: object}\nsteps:\n  - {id: call, tool: %s, retries: 0, args: %s}\n", call, args)
	for name, text := range map[string]string{"rein.yaml": cfg, "flow.yaml": flowText} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := project.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestMCPClientTools(t *testing.T) {
	t.Parallel()
	p := crmProject(t, "    tools:\n      lookup: {effect: read, idempotent: true}\n", "crm.lookup", `{id: "7"}`)
	res, err := clientOf(nil).Run(context.Background(), p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || fmt.Sprint(res.Outputs["call"]) != "map[id:7 name:Customer 7]" {
		t.Fatalf("run: %v, output %v", res.Error, res.Outputs["call"])
	}
	lookup, _ := p.Tools.Lookup("crm.lookup")
	if s := lookup.Spec(); s.Effect != tool.EffectRead || !s.Idempotent || !strings.Contains(string(s.InputSchema), `"id"`) || s.OutputSchema == nil || s.Description != "Finds a customer." {
		t.Errorf("crm.lookup spec = %+v, input %s", s, s.InputSchema)
	}
	die, _ := p.Tools.Lookup("crm.die")
	if s := die.Spec(); s.Effect != tool.EffectExternal || s.Idempotent {
		t.Errorf("crm.die (undeclared) effect = %q, idempotent %v; want external, false", s.Effect, s.Idempotent)
	}
	p.Close()
	if _, err := lookup.Call(context.Background(), map[string]any{"id": "1"}); err == nil || !strings.Contains(err.Error(), "mcp server crm: the connection is closed") {
		t.Errorf("a call after Project.Close: %v", err)
	}
}

// TestMCPClientFailures: a tool error, a server that dies mid-call (and
// the next call, which starts it again), a call that never returns.
func TestMCPClientFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tool string
		want []string
	}{
		{"crm.refund", []string{"refunds are closed today"}},
		{"crm.die", []string{"MCP server crm ended during the call", "crm: out of memory", "whether the call took effect is unknown"}},
		{"crm.hang", []string{"MCP server crm did not answer within 1s"}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			t.Parallel()
			p := crmProject(t, "", c.tool, "{}")
			res, err := clientOf(nil).Run(context.Background(), p, map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Error == nil {
				t.Fatalf("%s: the run succeeded", c.tool)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Error.Error(), w) {
					t.Errorf("%s: error %q does not say %q", c.tool, res.Error, w)
				}
			}
			if c.tool != "crm.die" {
				return
			}
			lookup, _ := p.Tools.Lookup("crm.lookup")
			out, err := lookup.Call(context.Background(), map[string]any{"id": "8"})
			if err != nil || fmt.Sprint(out) != "map[id:8 name:Customer 8]" {
				t.Errorf("after the server died, lookup = %v, %v; want the server started again", out, err)
			}
		})
	}
}

func TestMCPClientUndeclaredTool(t *testing.T) {
	t.Parallel()
	bin, err := crmServer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("mcp:\n  crm:\n    command: [%q]\n    tools:\n      delete_all: {effect: destructive}\n", bin)
	mustWrite(t, filepath.Join(dir, "rein.yaml"), []byte(cfg))
	mustWrite(t, filepath.Join(dir, "flow.yaml"), []byte("name: x\nsteps:\n  - {id: a, tool: crm.lookup, args: {id: x}}\n"))
	_, err = project.Load(dir, nil)
	want := "rein.yaml:5:7: mcp server crm declares tool delete_all, which the server does not offer (it offers: archive, create, die, env, hang, lookup, refund, send)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load: %v\nwant %s", err, want)
	}
}

// TestMCPClientEnvironment: a command server gets the base set, pass_env
// and env:, and nothing else of rein's environment.
func TestMCPClientEnvironment(t *testing.T) {
	t.Setenv("CRM_TOKEN", "tok-123")
	t.Setenv("REIN_TEST_UNPASSED", "leak")
	p := crmProject(t, "    pass_env: [CRM_TOKEN]\n    env: {CRM_MODE: live}\n", "crm.env", "{}")
	res, err := clientOf(nil).Run(context.Background(), p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Outputs["call"]); got != "map[CRM_MODE:live CRM_TOKEN:tok-123 UNPASSED:]" {
		t.Errorf("the server's environment: %s (%v)", got, res.Error)
	}
}

func TestMCPClientCannotStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "rein.yaml"), []byte("mcp:\n  crm: {command: [./no-such-server]}\n"))
	mustWrite(t, filepath.Join(dir, "flow.yaml"), []byte("name: x\nsteps:\n  - {id: a, tool: crm.lookup}\n"))
	_, err := project.Load(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "rein.yaml:2:3: mcp server crm: cannot connect") || !strings.Contains(err.Error(), "no-such-server") {
		t.Errorf("Load: %v", err)
	}
}

// mustWrite writes data to path, failing the test if it cannot.
func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
