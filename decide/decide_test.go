package decide_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/decide"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// toolbox holds two Go tools: lookup (read) and send (external).
func toolbox(t *testing.T) *project.Toolbox {
	t.Helper()
	obj := json.RawMessage(`{"type": "object"}`)
	tb, err := project.LoadConfig("", &project.LoadOptions{Tools: []tool.Tool{
		tool.Func(tool.Spec{Name: "lookup", Effect: tool.EffectRead, InputSchema: obj,
			OutputSchema: json.RawMessage(`{"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]}`)},
			func(context.Context, any) (any, error) { return map[string]any{"email": "ada@example.com"}, nil }),
		tool.Func(tool.Spec{Name: "send", Effect: tool.EffectExternal, InputSchema: obj},
			func(_ context.Context, args any) (any, error) {
				return map[string]any{"sent": args.(map[string]any)["to"]}, nil
			}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

const twoSteps = `{"goal": "mail ada", "steps": [
	{"id": "find", "tool": "lookup", "args": {}},
	{"id": "mail", "tool": "send", "args": {"to": {"$ref": "find.email"}}}]}`

// A valid plan runs through the gate: a refusal is the step's error, and
// the decision is reported with the call's key.
func TestCheckAndRunAPlan(t *testing.T) {
	t.Parallel()
	cat, err := decide.NewCatalog(toolbox(t), decide.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cat.Tools(); len(got) != 2 {
		t.Fatalf("tools %v, want lookup and send", got)
	}
	c, err := decide.CheckPlan(cat, []byte(twoSteps))
	if err != nil || c.Problems != nil {
		t.Fatalf("check: %v %v", err, c.Problems)
	}
	out, err := c.Run(context.Background(), decide.RunOptions{})
	if err != nil || out["mail"].(map[string]any)["sent"] != "ada@example.com" {
		t.Fatalf("run: %v %v", out, err)
	}
	var decided []string
	out, err = c.Run(context.Background(), decide.RunOptions{Gate: noMail{}, OnGate: func(call string, _ *safety.Invocation, d safety.Decision) {
		decided = append(decided, call+" "+string(d.Verdict))
	}})
	var se *decide.StepError
	if !errors.As(err, &se) || se.StepID != "mail" || fault.ClassOf(err) != fault.Policy || out["find"] == nil {
		t.Fatalf("a blocked step: %v %v", out, err)
	}
	if len(decided) != 2 || decided[1] != "plan/plan1/mail block" {
		t.Errorf("decisions %q, want lookup's allow and mail's block with its key", decided)
	}
}

// noMail blocks the send tool.
type noMail struct{}

func (noMail) Check(_ context.Context, inv *safety.Invocation) (safety.Decision, error) {
	if inv.Tool.Name == "send" {
		return safety.Decision{Verdict: safety.Block, Rule: "no-mail", Reason: "not today"}, nil
	}
	return safety.Decision{Verdict: safety.Allow}, nil
}

// A plan that breaks the catalog is not run: every problem, by pointer.
func TestAnInvalidPlanIsNotRun(t *testing.T) {
	t.Parallel()
	cat, err := decide.NewCatalog(toolbox(t), decide.PlanOptions{Allowed: []string{"lookup"}, MaxSteps: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := decide.CheckPlan(cat, []byte(twoSteps))
	if err != nil || len(c.Problems) == 0 || c.Cause == nil {
		t.Fatalf("check: %v %+v", err, c)
	}
	if _, err := c.Run(context.Background(), decide.RunOptions{}); err == nil {
		t.Fatal("an invalid plan ran")
	}
	if _, err := decide.NewCatalog(toolbox(t), decide.PlanOptions{Allowed: []string{"nope"}}); err == nil {
		t.Fatal("a catalog allowing an unknown tool")
	}
}

// A rule decides without a model; otherwise the semantic router chooses
// within the routes.
func TestRoutes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "routes.yaml")
	if err := os.WriteFile(path, []byte("routes:\n  - {name: billing, description: invoices, rules: [{prefix: \"invoice\"}]}\n  - {name: support, description: anything else}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := decide.ParseRoutes(path)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte("replies:\n  - {step: route, decision: route, route: support, reason: a question}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := scripted.Load(script)
	if err != nil {
		t.Fatal(err)
	}
	router, err := file.Router(decide.ModelSemantic(m, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]string{"invoice 12 is wrong": "billing", "how do I log in?": "support"} {
		res, err := router.Route(context.Background(), decide.RouteRequest{Text: text})
		if err != nil || res.Route != want {
			t.Errorf("%q: %+v %v, want %s", text, res, err, want)
		}
	}
	if err := os.WriteFile(path, []byte("routes:\n  - {name: billing, description: b, rules: [{regexp: \"(\"}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = decide.ParseRoutes(path)
	var re *decide.RoutesError
	if !errors.As(err, &re) || len(re.Problems) == 0 {
		t.Fatalf("a bad routes file: %v", err)
	}
}
