package rein_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/trace"
)

// crmFolder writes a flow folder whose rein.yaml names the crm server
// (its calls logged to the returned file) with the tool declarations
// tools, and the flow flowText.
func crmFolder(t *testing.T, tools, flowText string) (dir, log string) {
	t.Helper()
	bin, err := crmServer()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	log = filepath.Join(dir, "crm.log")
	cfg := fmt.Sprintf("mcp:\n  crm:\n    command: [%q]\n    env: {CRM_SENT: %q}\n    tools:\n%s", bin, log, tools)
	for name, text := range map[string]string{"rein.yaml": cfg, "flow.yaml": flowText} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, log
}

// TestMCPToolCompensation: an MCP server's tool declared compensatable in
// rein.yaml mcp: carries its compensation, resources and tags into its
// spec, so a flow's saga (on_failure: compensate) calls the compensation —
// another tool of the same server, over MCP — when a later step fails,
// and the effect graph records what the call wrote.
func TestMCPToolCompensation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, log := crmFolder(t, `      create:
        effect: write
        reversibility: compensatable
        compensate: {tool: crm.archive, args: {id: "{output.id}"}}
        resources: ["crm:customer/{output.id}"]
        tags: [user-facing]
      archive: {effect: write, idempotent: true}
`, `name: onboard
inputs: {type: object}
on_failure: compensate
steps:
  - {id: create, tool: crm.create, args: {name: "{input.name}"}}
  - {id: refund, tool: crm.refund, args: {}, retries: 0}
`)
	p, err := project.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	create, _ := p.Tools.Lookup("crm.create")
	if s := create.Spec(); s.Compensate == nil || s.Compensate.Tool != "crm.archive" || strings.Join(s.Resources, ",") != "crm:customer/{output.id}" ||
		strings.Join(s.Tags, ",") != "user-facing" {
		t.Fatalf("crm.create spec = %+v", s)
	}
	st, err := openStore(ctx, filepath.Join(dir, "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := clientOf(&engine.Config{Store: st}).Run(ctx, p, map[string]any{"name": "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunFailed || len(res.Pending) != 0 {
		t.Fatalf("run %s (%v), pending %+v: want failed, compensated", res.Status, res.Error, res.Pending)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != "{\"create\":\"ada\"}\n{\"archive\":\"c-ada\"}\n" {
		t.Errorf("the CRM saw %q, want the creation, then its archiving", got)
	}
	c, err := loadClient(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Runs().Effects(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var wrote, compensated bool
	for _, c := range v.Calls {
		if c.Tool == "crm.create" {
			wrote = strings.Join(c.Writes, ",") == "crm:customer/c-ada" && strings.Join(c.Tags, ",") == "user-facing" && c.State == "done"
		}
	}
	for _, m := range v.Remediations {
		compensated = compensated || m.Tool == "crm.create" && m.Action == "compensate" && m.Status == "done" && m.Call != nil && m.Call.Tool == "crm.archive"
	}
	if !wrote || !compensated {
		t.Errorf("effect graph: calls %+v\nremediations %+v", v.Calls, v.Remediations)
	}
}

// TestMCPToolCompensationIsChecked: an MCP tool's compensation is
// validated as an exec tool's, at its line: it names a registered tool
// (a tool of the same server by its full name), and its args fit that
// tool's input schema.
func TestMCPToolCompensationIsChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ decl, want string }{
		{`      create: {effect: write, reversibility: compensatable, compensate: {tool: archive, args: {id: "{output.id}"}}}` + "\n",
			`rein.yaml:6:73: tool crm.create: compensate: tool "archive" is not registered (a tool of the same MCP server is named with its server: crm.archive)`},
		{`      create: {effect: write, reversibility: compensatable, compensate: {tool: crm.archive, args: {ident: "{output.id}"}}}` + "\n",
			`rein.yaml:6:73: tool crm.create: compensate: args lack "id", which tool crm.archive requires`},
		{`      create: {effect: write, reversibility: compensatable, compensate: {tool: crm.archive, args: {id: 7}}}` + "\n",
			`rein.yaml:6:73: tool crm.create: compensate: args "id" does not fit tool crm.archive's input`},
	} {
		dir, _ := crmFolder(t, c.decl, "name: x\nsteps:\n  - {id: a, tool: crm.lookup, args: {id: x}}\n")
		_, err := project.Load(dir, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load: %v\nwant %s", err, c.want)
		}
	}
}
