package rein_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/tool"
)

func writeConfigFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		// No child forks while the file is open for writing: it would hold
		// the descriptor until its exec, and running the file meanwhile
		// fails with "text file busy" (go.dev/issue/22315).
		syscall.ForkLock.RLock()
		err := os.WriteFile(p, []byte(body), 0o755)
		syscall.ForkLock.RUnlock()
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const configYAML = `tools:
  echo_city:
    command: ["./echo.sh"]
    effect: none
    input_schema: {type: object, properties: {city: {type: string}}, required: [city]}
models:
  default: {provider: openai, model: gpt-4o-mini, api_key_env: REIN_TEST_CONFIG_KEY}
`

func TestLoadConfigToolsWithoutFlow(t *testing.T) {
	t.Parallel()
	dir := writeConfigFiles(t, map[string]string{
		"rein.yaml": configYAML,
		"echo.sh":   "#!/bin/sh\nLC_ALL=C; export LC_ALL\ncat\n",
	})
	tb, err := project.LoadConfig(filepath.Join(dir, "rein.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tb.Tools.Names(); len(got) != 1 || got[0] != "echo_city" {
		t.Fatalf("tools = %v", got)
	}
	echo, _ := tb.Tools.Lookup("echo_city")
	if s := echo.Spec(); len(s.InputSchema) == 0 || s.Effect != tool.EffectNone {
		t.Errorf("spec = %+v", s)
	}
	// The exec tool runs in the rein.yaml's folder, whatever the process's.
	out, err := echo.Call(context.Background(), map[string]any{"city": "Tokyo"})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := out.(map[string]any); m["city"] != "Tokyo" {
		t.Errorf("output = %v", out)
	}
	if !tb.Models.Has("default") || tb.Models.Has("other") {
		t.Errorf("models: has default %v, other %v", tb.Models.Has("default"), tb.Models.Has("other"))
	}
}

func TestLoadConfigModels(t *testing.T) {
	t.Parallel()
	dir := writeConfigFiles(t, map[string]string{"rein.yaml": configYAML, "echo.sh": "#!/bin/sh\ncat\n",
		"script.yaml": "replies:\n  - {step: s, output: {ok: true}}\n"})
	cfg := filepath.Join(dir, "rein.yaml")

	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	tb, err := project.LoadConfig(cfg, &project.LoadOptions{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tb.Model("default")
	if err == nil || !strings.Contains(err.Error(), "REIN_TEST_CONFIG_KEY") || !strings.Contains(err.Error(), "rein.yaml:") {
		t.Fatalf("no key: %v", err)
	}
	// Through the registry the model opens on its first call, and fails it.
	m, err := tb.Models.Lookup("default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), &model.Request{StepID: "s"}); err == nil || !strings.Contains(err.Error(), "REIN_TEST_CONFIG_KEY") {
		t.Fatalf("lazy open: %v", err)
	}
	if _, err := tb.Model("nope"); err == nil || !strings.Contains(err.Error(), "configures default") ||
		!errors.Is(err, model.ErrNotConfigured) || strings.Contains(err.Error(), "--") {
		t.Fatalf("unknown model: %v", err)
	}
	if _, err := tb.Model("nosuch/x"); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Fatalf("bad ref: %v", err)
	}

	env["REIN_TEST_CONFIG_KEY"] = "test-key"
	if _, err := tb.Model("default"); err != nil {
		t.Fatalf("with key: %v", err)
	}

	// A script answers every name, the configured ones included.
	tb, err = project.LoadConfig(cfg, &project.LoadOptions{Script: filepath.Join(dir, "script.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"default", "anything"} {
		m, err := tb.Model(name)
		if err != nil || m != tb.Script {
			t.Fatalf("%s: %v, %v", name, m, err)
		}
	}
	resp, err := tb.Script.Generate(context.Background(), &model.Request{StepID: "s"})
	if err != nil || resp.Text != `{"ok":true}` {
		t.Fatalf("script: %v %v", resp, err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	t.Parallel()
	dir := writeConfigFiles(t, map[string]string{
		"rein.yaml": configYAML,
		"echo.sh":   "#!/bin/sh\ncat\n",
		"bad.yaml":  "tools:\n  x: {command: [a], effect: sideways}\nmodel: {}\n",
	})
	_, err := project.LoadConfig(filepath.Join(dir, "bad.yaml"), nil)
	var fe *flow.Error
	if !errors.As(err, &fe) || len(fe.Diagnostics) < 2 || !strings.Contains(err.Error(), "bad.yaml:") {
		t.Fatalf("bad rein.yaml: %v", err)
	}
	if _, err := project.LoadConfig(filepath.Join(dir, "missing.yaml"), nil); err == nil {
		t.Fatal("missing rein.yaml loaded")
	}
	goTool := tool.Func(tool.Spec{Name: "echo_city", Effect: tool.EffectNone}, func(context.Context, any) (any, error) { return nil, nil })
	_, err = project.LoadConfig(filepath.Join(dir, "rein.yaml"), &project.LoadOptions{Tools: []tool.Tool{goTool}})
	if err == nil || !strings.Contains(err.Error(), "also registered as a Go tool") {
		t.Fatalf("clash: %v", err)
	}
	// No rein.yaml at all: only the program's tools.
	tb, err := project.LoadConfig("", &project.LoadOptions{Tools: []tool.Tool{goTool}})
	if err != nil || tb.Config != nil || len(tb.Tools.Names()) != 1 {
		t.Fatalf("no config: %v %v", tb, err)
	}
}

// TestConfigRiskReachesTheEngine: rein.yaml risk: and review: apply to a
// flow that has none of its own; the flow's own replace them.
func TestConfigRiskReachesTheEngine(t *testing.T) {
	t.Parallel()
	var calls int
	save := tool.Func(tool.Spec{Name: "save", Effect: tool.EffectWrite}, func(context.Context, any) (any, error) {
		calls++
		return map[string]any{"ok": true}, nil
	})
	for _, tc := range []struct{ flowRisk, status string }{{"", "failed"}, {"risk: {min_tier: 2}\n", "succeeded"}} {
		dir := writeConfigFiles(t, map[string]string{
			"rein.yaml": "risk: {min_tier: 4}\n",
			"flow.yaml": "name: cfgrisk\n" + tc.flowRisk + "steps:\n  - {id: s, tool: save, args: {id: x}}\n",
		})
		p, err := project.Load(filepath.Join(dir, "flow.yaml"), &project.LoadOptions{Tools: []tool.Tool{save}})
		if err != nil {
			t.Fatal(err)
		}
		if p.Risk == nil || p.Risk.MinTier != 4 {
			t.Fatalf("project risk %+v", p.Risk)
		}
		res, err := clientOf(nil).Run(context.Background(), p, nil)
		if err != nil {
			t.Fatal(err)
		}
		// tier 4 wants a person for the write, and a run without a store
		// cannot wait: the call is refused.
		if string(res.Status) != tc.status || tc.status == "failed" && !strings.Contains(res.Error.Error(), "require_approval on tool save by rule tier-review: at risk tier 4") {
			t.Errorf("flow risk %q: %s %v", tc.flowRisk, res.Status, res.Error)
		}
	}
	if calls != 1 {
		t.Errorf("save called %d times, want once (tier 2)", calls)
	}
}
