package project_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/project"
)

// agents writes agent folders under one root: name → its agent.yaml.
func agents(t *testing.T, defs map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range defs {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte("replies:\n  - {step: agent, raw: ok}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// An agent that calls itself through another is refused at load time, at
// the entry that closes the cycle (file:line:col), naming the chain.
func TestAgentToolCycleIsLocated(t *testing.T) {
	t.Parallel()
	root := agents(t, map[string]string{
		"a": "model: m\ntools:\n  b: {agent: ../b}\n",
		"b": "model: m\ntools:\n  x: {agent: ../c}\n",
		"c": "model: m\ntools:\n  back: {agent: ../a}\n",
	})
	_, err := project.LoadAgent(filepath.Join(root, "a"), nil)
	var fe *flow.Error
	if !errors.As(err, &fe) {
		t.Fatalf("load: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{filepath.Join(root, "c", "agent.yaml") + ":3:3: tool back: agent " + filepath.Join(root, "a") + " calls itself",
		filepath.Join(root, "a") + " -> " + filepath.Join(root, "b") + " -> " + filepath.Join(root, "c") + " -> " + filepath.Join(root, "a"),
		filepath.Join(root, "a", "agent.yaml") + ":3:3: tool b: agent"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q:\n%s", want, msg)
		}
	}
	// itself, directly
	root = agents(t, map[string]string{"self": "model: m\ntools:\n  me: {agent: .}\n"})
	if _, err := project.LoadAgent(filepath.Join(root, "self"), nil); err == nil || !strings.Contains(err.Error(), ":3:3: tool me: agent "+filepath.Join(root, "self")+" calls itself") {
		t.Fatalf("load: %v", err)
	}
}

// A chain deeper than agent.MaxAgentDepth is refused where it gets too
// deep; a folder without agent.yaml is refused at its entry.
func TestAgentToolDepthAndFolder(t *testing.T) {
	t.Parallel()
	root := agents(t, map[string]string{
		"a1": "model: m\ntools:\n  n: {agent: ../a2}\n",
		"a2": "model: m\ntools:\n  n: {agent: ../a3}\n",
		"a3": "model: m\ntools:\n  n: {agent: ../a4}\n",
		"a4": "model: m\ntools:\n  n: {agent: ../a5}\n",
		"a5": "model: m\ntools:\n  n: {command: [\"true\"], effect: none}\n",
	})
	_, err := project.LoadAgent(filepath.Join(root, "a1"), nil)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, "a4", "agent.yaml")+":3:3: tool n: agents called as tools nest 5 deep here") {
		t.Fatalf("load: %v", err)
	}
	if _, err := project.LoadAgent(filepath.Join(root, "a2"), nil); err != nil {
		t.Fatalf("a chain of 4 loads: %v", err)
	}
	root = agents(t, map[string]string{"a": "model: m\ntools:\n  n: {agent: ../nowhere}\n"})
	if _, err := project.LoadAgent(filepath.Join(root, "a"), nil); err == nil || !strings.Contains(err.Error(), `:3:14: tool n: agent "../nowhere" is not an agent folder`) {
		t.Fatalf("load: %v", err)
	}
}

// A handoff is an agent folder: a path that is not one, an unknown
// history filter or field, and a handoff back along the chain are refused,
// located in agent.yaml.
func TestHandoffEntriesAreChecked(t *testing.T) {
	t.Parallel()
	root := agents(t, map[string]string{
		"a": "model: m\ntools: {}\nhandoffs:\n  - ../nowhere\n  - {agent: ../b, history: some}\n  - {agent: ../b, extra: 1}\n",
		"b": "model: m\ntools: {}\n",
	})
	_, err := project.LoadAgent(filepath.Join(root, "a"), nil)
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{`agent.yaml:4:5: handoff "../nowhere" is not an agent folder`,
		`agent.yaml:5:28: handoffs: history must be all, no_tools or last_user, not "some"`, `agent.yaml:6:19: unknown field "extra" in a handoff`, `agent.yaml:6:13: handoff b is listed twice`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	// a handoff back to an agent on the chain hands the conversation
	// back (bounded by max_handoffs); a handoff to the agent itself does
	// not load.
	root = agents(t, map[string]string{
		"a": "model: m\ntools: {}\nhandoffs: [../b]\n",
		"b": "model: m\ntools: {}\nhandoffs: [../a]\n",
		"c": "model: m\ntools: {}\nhandoffs: [../c]\n",
	})
	back, err := project.LoadAgent(filepath.Join(root, "a"), nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer back.Close()
	tl, _ := back.Tools.Lookup("transfer_to_b")
	b := tl.(agent.Definer).AgentDefinition()
	if len(b.Config.Tools) != 1 || b.Config.Tools[0].Agent == nil || !b.Config.Tools[0].Agent.Back || b.Config.Tools[0].Agent.Path != filepath.Join(root, "a") {
		t.Fatalf("b's handoffs: %+v", b.Config.Tools)
	}
	if _, err := project.LoadAgent(filepath.Join(root, "c"), nil); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "c", "agent.yaml")+":3:12: tool transfer_to_c: agent "+filepath.Join(root, "c")+" calls itself") {
		t.Fatalf("load: %v", err)
	}
	root = agents(t, map[string]string{
		"a": "model: m\ntools: {}\nhandoffs: [{agent: ../b, history: no_tools}]\n",
		"b": "model: m\ntools: {}\n",
	})
	p, err := project.LoadAgent(filepath.Join(root, "a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if tl, ok := p.Tools.Lookup("transfer_to_b"); !ok || !project.IsAgentTool(tl) {
		t.Fatalf("no handoff tool transfer_to_b: %v", p.Tools.Names())
	}
}

// The secrets a sub-agent's rein.yaml names are hidden in the calling
// project's runs too: its calls are journaled there.
func TestSubAgentSecretsAreRedacted(t *testing.T) { //nolint:paralleltest // sets the environment
	t.Setenv("TEAMS_SUB_CRED", "s3cr3t-sub-value-4821")
	root := agents(t, map[string]string{
		"a": "model: m\ntools:\n  b: {agent: ../b}\n",
		"b": "model: m\ntools: {}\n",
	})
	if err := os.WriteFile(filepath.Join(root, "b", "rein.yaml"), []byte("secrets: [TEAMS_SUB_CRED]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := project.LoadAgent(filepath.Join(root, "a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.Redactor().String("token s3cr3t-sub-value-4821"); strings.Contains(got, "s3cr3t") {
		t.Fatalf("the sub-agent's secret is not hidden: %s", got)
	}
}

// A project pins every agent folder its agents reach, nested ones too,
// each by the digest of its definitions: a change to the deepest folder's
// rein.yaml changes its digest alone.
func TestAgentFoldersArePinnedNested(t *testing.T) {
	t.Parallel()
	root := agents(t, map[string]string{
		"a": "model: m\ntools:\n  b: {agent: ../b}\n",
		"b": "model: m\ntools:\n  c: {agent: ../c}\n",
		"c": "model: m\ntools: {}\n",
	})
	load := func() []project.PinnedAgent {
		p, err := project.LoadAgent(filepath.Join(root, "a"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		return p.Agents()
	}
	before := load()
	if len(before) != 2 || before[0].Path != filepath.Join(root, "b") || before[1].Path != filepath.Join(root, "c") || len(before[0].SHA256) != 64 {
		t.Fatalf("pinned %+v", before)
	}
	if err := os.WriteFile(filepath.Join(root, "c", "rein.yaml"), []byte("tools: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	after := load()
	if after[0].SHA256 != before[0].SHA256 || after[1].SHA256 == before[1].SHA256 {
		t.Errorf("after c's rein.yaml appeared: %+v, before %+v", after, before)
	}
}
