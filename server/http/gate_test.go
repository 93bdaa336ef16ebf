package http_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	reinhttp "github.com/reinhq/rein/server/http"
)

// A write a model's value drives waits for a person by the default rules:
// the inbox says which rule asked.
func TestInboxSaysWhichRuleAsked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gated")
	if err := os.CopyFS(dir, os.DirFS("testdata/gated")); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{dirs: []string{dir}})
	s := e.start("", map[string]any{"flow": "gated", "input": map[string]any{"customer": "acme"}})
	if s.Status != "waiting" {
		t.Fatalf("gated run is %s, want waiting", s.Status)
	}
	var inbox struct {
		Approvals []reinhttp.PendingApproval `json:"approvals"`
	}
	e.do("GET", "/v1/approvals", "", nil).json(t, &inbox)
	if len(inbox.Approvals) != 1 || inbox.Approvals[0].Tool != "record" || !strings.Contains(inbox.Approvals[0].Why, "rule") {
		t.Fatalf("inbox = %s", jsonOf(inbox))
	}
}

// /metrics counts the gate's decisions on tool calls (from their call
// records, each call once), the log-only rules that held, and guardrail
// trips by kind, side and on_trip; a run's timeline shows its trips.
func TestMetricsCountGateLogOnlyAndGuardrails(t *testing.T) {
	gated := filepath.Join(t.TempDir(), "gated")
	if err := os.CopyFS(gated, os.DirFS("testdata/gated")); err != nil {
		t.Fatal(err)
	}
	yaml, err := os.ReadFile(filepath.Join(gated, "rein.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yaml = []byte(strings.Replace(string(yaml), "  defaults: true\n", "  defaults: true\n  rules:\n    - {name: watch-records, tools: [record], verdict: block, enforce: false}\n", 1))
	guarded := filepath.Join(t.TempDir(), "guarded")
	for name, text := range map[string]string{
		filepath.Join(gated, "rein.yaml"): string(yaml),
		filepath.Join(guarded, "flow.yaml"): `name: guarded
steps:
  - id: answer
    type: llm
    model: scripted
    prompt_template: "Answer {input.q}"
    guardrails:
      output: [{name: no_notes, deny: [internal-only]}]
`,
		filepath.Join(guarded, "script.yaml"): "replies:\n  - {step: answer, raw: 'internal-only: watch list'}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, envOpts{dirs: []string{gated, guarded}})
	if s := e.start("", map[string]any{"flow": "gated", "input": map[string]any{"customer": "acme"}}); s.Status != "waiting" {
		t.Fatalf("gated run is %s, want waiting", s.Status)
	}
	if s := e.start("", map[string]any{"flow": "guarded", "input": map[string]any{"q": "x"}}); s.Status != "failed" {
		t.Fatalf("guarded run is %s, want failed", s.Status)
	}
	body := string(e.do("GET", "/metrics", "", nil).body)
	for _, want := range []string{
		`rein_gate_decisions_total{decision="require_approval"} 1`,
		`rein_gate_log_only_total{verdict="block"} 1`,
		`rein_guardrail_trips_total{kind="deny",on_trip="stop",side="output"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	runs := e.do("GET", "/v1/runs?flow=guarded", "", nil)
	var list struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	runs.json(t, &list)
	if len(list.Runs) != 1 {
		t.Fatalf("runs of guarded: %s", runs.body)
	}
	var why struct {
		Guardrails []struct {
			Name   string `json:"name"`
			OnTrip string `json:"on_trip"`
		} `json:"guardrails"`
	}
	e.do("GET", "/v1/runs/"+list.Runs[0].ID+"/why", "", nil).json(t, &why)
	if len(why.Guardrails) != 1 || why.Guardrails[0].Name != "no_notes" || why.Guardrails[0].OnTrip != "stop" {
		t.Errorf("GET /v1/runs/{id}/why: %+v", why)
	}
	page := page(t, "guarded run", e.browser().get("/runs/"+list.Runs[0].ID), 200)
	if want := "<td>no_notes (deny, output): stop</td>"; !strings.Contains(page, want) {
		t.Errorf("the run's timeline lacks %s\n%s", want, page)
	}
}
