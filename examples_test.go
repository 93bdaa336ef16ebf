package rein_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein"
	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/trace"
)

// runExample runs an example folder (or a copy of it with flow.yaml
// edited) offline, on its own script, and returns the result.
func runExample(t *testing.T, dir string, input any, edit func(string) string) *engine.Result {
	t.Helper()
	if edit != nil {
		tmp := t.TempDir()
		if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(tmp, "flow.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "flow.yaml"), []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
		dir = tmp
	}
	p, err := project.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(nil).Run(context.Background(), p, input)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestExamplePlanningReplansAroundTheDownSource(t *testing.T) {
	t.Parallel()
	res := runExample(t, "examples/planning", map[string]any{"city": "Tokyo"}, nil)
	if res.Status != trace.RunSucceeded {
		t.Fatalf("status %s: %+v", res.Status, res.Error)
	}
	out := res.Outputs["brief"].(map[string]any)
	if got := out["result"].(map[string]any)["brief"]; got != "Tokyo: 18.0°C / 64.4°F, cloudy." {
		t.Fatalf("brief %q", got)
	}
	if out["replans"] != 1.0 || len(out["failures"].([]any)) != 1 {
		t.Fatalf("replans %v, failures %v", out["replans"], out["failures"])
	}
	if _, ran := out["outputs"].(map[string]any)["weather"]; ran {
		t.Fatal("the failed primary read has an output")
	}
}

func TestExamplePlanningWithoutReplansFailsWithTheReplanBudget(t *testing.T) {
	t.Parallel()
	res := runExample(t, "examples/planning", map[string]any{"city": "Tokyo"}, func(s string) string {
		return strings.Replace(s, "max_replans: 1", "max_replans: 0", 1)
	})
	if res.Status != trace.RunFailed || res.Error.Class != fault.Budget || res.Error.Budget != "max_replans" || res.Error.Step != "brief" {
		t.Fatalf("status %s, error %+v: want the max_replans budget error at brief", res.Status, res.Error)
	}
	if !strings.Contains(res.Error.Message, "read_primary_weather") {
		t.Fatalf("the error does not say which plan step failed: %s", res.Error.Message)
	}
}

func TestExampleRouting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text, route, source, handler string
		modelCalls                   int
	}{
		// a rule decides: no model is asked, not even for the handler.
		{"weather: Tokyo", "weather", "rule", "weather", 0},
		{"I think I was charged twice this month", "account", "semantic", "account", 2},
		{"Rewrite this politely: the office opens at 9", "general", "semantic", "general", 2},
	}
	for _, tc := range cases {
		t.Run(tc.route, func(t *testing.T) {
			t.Parallel()
			res := runExample(t, "examples/routing", map[string]any{"text": tc.text}, nil)
			if res.Status != trace.RunSucceeded {
				t.Fatalf("status %s: %+v", res.Status, res.Error)
			}
			triage := res.Outputs["triage"].(map[string]any)
			if triage["route"] != tc.route || triage["source"] != tc.source || triage["reason"] == "" {
				t.Fatalf("triage %v", triage)
			}
			if res.Usage.LLMCalls != tc.modelCalls {
				t.Fatalf("%d model calls, want %d", res.Usage.LLMCalls, tc.modelCalls)
			}
			for _, h := range []string{"weather", "account", "general"} {
				want := trace.StepSkipped
				if h == tc.handler {
					want = trace.StepSucceeded
				}
				if got := res.Steps[h].Status; got != want {
					t.Errorf("step %s %s, want %s", h, got, want)
				}
			}
		})
	}
}

// TestExampleRefundWaitsForApproval walks the README's durable-run
// walkthrough through the library: the large refund waits for review, is
// approved from "another process" (LoadRun on the store) and sends the
// refund once; a small one needs no approval; a rejected one never sends.
func TestExampleRefundWaitsForApproval(t *testing.T) {
	outbox := t.TempDir()
	t.Setenv("REIN_OUTBOX", outbox)
	ctx := context.Background()
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := project.Load("examples/refund", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Flow.Warnings) != 0 || len(p.CheckCommands()) != 0 {
		t.Fatalf("warnings %v, commands %v", p.Flow.Warnings, p.CheckCommands())
	}
	cfg := &engine.Config{Store: st}
	large := map[string]any{"order": "A-1042", "amount": 240, "reason": "arrived broken"}
	res, err := clientOf(cfg).Start(ctx, p, large, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != "review" ||
		res.Pending[0].Message != "Refund 240 EUR to Ada Lovelace for order A-1042 (arrived broken)?" {
		t.Fatalf("status %s, pending %+v", res.Status, res.Pending)
	}
	if sent, _ := os.ReadDir(outbox); len(sent) != 0 {
		t.Fatalf("a refund was sent before the approval: %v", sent)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: res.RunID, StepID: "review",
		Status: store.ApprovalApproved, Comment: "ok", DecidedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	again, err := project.LoadRun(ctx, st, res.RunID, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = resumeWith(ctx, cfg, again, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunSucceeded || res.Outputs["refund"].(map[string]any)["refunded"] != 240.0 {
		t.Fatalf("after approve: status %s, outputs %v, error %+v", res.Status, res.Outputs, res.Error)
	}
	if sent, _ := os.ReadDir(outbox); len(sent) != 1 {
		t.Fatalf("%d refunds sent, want 1", len(sent))
	}

	res, err = clientOf(cfg).Start(ctx, p, map[string]any{"order": "B-7", "amount": 20, "reason": "late"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunSucceeded || res.Steps["review"].Status != trace.StepSkipped || res.Steps["refund"].Status != trace.StepSucceeded {
		t.Fatalf("small refund: status %s, steps %+v, error %+v", res.Status, res.Steps, res.Error)
	}

	res, err = clientOf(cfg).Start(ctx, p, large, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: res.RunID, StepID: "review",
		Status: store.ApprovalRejected, Comment: "not ours", DecidedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	if res, err = resumeWith(ctx, cfg, p, res.RunID); err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunFailed || res.Error.Step != "review" {
		t.Fatalf("rejected refund: status %s, error %+v", res.Status, res.Error)
	}
	if sent, _ := os.ReadDir(outbox); len(sent) != 2 {
		t.Fatalf("%d refunds sent, want 2 (the large approved one and the small one)", len(sent))
	}
}

// TestExampleCRMOnboardingRemediatesTheWrongRegion: the region a model
// inferred is wrong; remediating that premise archives the customer,
// unlinks the three items, freezes the sent welcome message and escalates
// it — the fake CRM's state file shows exactly that — and after a person
// deals with it the run ends cancelled, nothing more having run.
func TestExampleCRMOnboardingRemediatesTheWrongRegion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("examples/crm-onboarding")); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := project.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	input, err := os.ReadFile(filepath.Join(dir, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in any
	if err := json.Unmarshal(input, &in); err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(&engine.Config{Store: st}).Run(ctx, p, in)
	if err != nil || res.Status != trace.RunWaiting || res.Pending[0].StepID != "verify_region" {
		t.Fatalf("run: %v %+v", err, res)
	}
	state := func() string { return crmState(t, dir) }
	before := "customer cust-ada-lovelace region=us-east active\nlink cust-ada-lovelace contract-1\nlink cust-ada-lovelace invoice-7\nlink cust-ada-lovelace seat-3\nnotified cust-ada-lovelace ada@example.com"
	if got := state(); got != before {
		t.Fatalf("crm.state after the run:\n%s", got)
	}
	c, err := loadClient(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Remediate(ctx, res.RunID, "infer_region", nil)
	if err != nil {
		t.Fatal(err)
	}
	after := "customer cust-ada-lovelace region=us-east archived\nnotified cust-ada-lovelace ada@example.com"
	if got := state(); got != after {
		t.Fatalf("crm.state after remediate:\n%s\nwant:\n%s", got, after)
	}
	actions := map[string]int{}
	for _, c := range m.Impact.Calls {
		actions[c.StepID+" "+string(c.Action)]++
	}
	if actions["create compensate"] != 1 || actions["link undo"] != 3 || actions["welcome freeze"] != 1 || actions["lookup keep"] != 1 {
		t.Errorf("impact: %v", actions)
	}
	pending := m.Run.Pending()
	if m.Run.Run.Status != trace.RunWaiting || len(pending) != 1 || pending[0].StepID != "welcome/1/freeze" || pending[0].Kind != store.KindEscalation {
		t.Fatalf("after remediate: %s, pending %+v", m.Run.Run.Status, pending)
	}
	out, err := c.Decide(ctx, res.RunID, "welcome/1/freeze", rein.Decision{Status: store.ApprovalApproved, Comment: "apologised by phone"},
		&rein.DecideOptions{Resume: true})
	if err != nil || out.Result.Status != trace.RunCancelled {
		t.Fatalf("decide: %v %+v", err, out)
	}
	if got := state(); got != after {
		t.Errorf("crm.state at the end:\n%s", got)
	}
	v, err := c.Runs().Effects(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var frozen []string
	automatic := 0
	for _, r := range v.Remediations {
		if r.Action == "freeze" && r.Status == "resolved" {
			frozen = r.Invalid
		}
		if r.Action != "freeze" && r.Status == "done" && r.Tier == 2 && r.Control == "automatic" {
			automatic++ // archive_customer and unlink_item are plain writes: tier 2, made at once
		}
	}
	if automatic != 4 {
		t.Errorf("%d compensations made at once at tier 2, want 4: %+v", automatic, v.Remediations)
	}
	if strings.Join(frozen, " ") != "mail:ada@example.com call:"+res.RunID+"/welcome/1" {
		t.Errorf("the welcome message marked invalid: %v", frozen)
	}
}

// crmState is the fake CRM's state file in dir, its lines sorted.
func crmState(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "crm.state"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestExampleCRMOnboardingGateHoldsTheInferredRegion: the same onboarding
// with the default policy gate (gated.yaml). The region the model got
// wrong for Ada is not confirmed by the registry lookup, so rule
// inferred-drives-effect holds the creation for a person and nothing
// reaches the CRM; the region it got right for Alan is confirmed by the
// lookup's output, so the creation and the links go ahead without a
// person (the reviewer finds each supported at tier 3) and only the
// irreversible welcome message waits (irreversible-at-tier-3).
func TestExampleCRMOnboardingGateHoldsTheInferredRegion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := openStore(ctx, filepath.Join(t.TempDir(), "rein.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run := func(inputFile string) (string, *engine.Result, []*trace.Event) {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS("examples/crm-onboarding")); err != nil {
			t.Fatal(err)
		}
		p, err := project.Load(filepath.Join(dir, "gated.yaml"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		b, err := os.ReadFile(filepath.Join(dir, inputFile))
		if err != nil {
			t.Fatal(err)
		}
		var in any
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		res, err := clientOf(&engine.Config{Store: st}).Run(ctx, p, in)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := st.Events(ctx, res.RunID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return dir, res, evs
	}
	decisions := func(evs []*trace.Event, step string) []journal.CallGate {
		var out []journal.CallGate
		for _, g := range journal.GateDecisions(evs) {
			if g.StepID == step {
				out = append(out, g.Decision)
			}
		}
		return out
	}

	dir, res, evs := run("input.json")
	if res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != "create" ||
		!strings.Contains(res.Pending[0].Message, "rule inferred-drives-effect") {
		t.Fatalf("Ada: %s, pending %+v; want the creation held by inferred-drives-effect", res.Status, res.Pending)
	}
	if got := crmState(t, dir); got != "" {
		t.Errorf("Ada: crm.state %q, want nothing created", got)
	}
	if d := decisions(evs, "create"); len(d) != 1 || d[0].Verdict != "require_approval" || !strings.HasPrefix(d[0].Why, "rule inferred-drives-effect: ") {
		t.Errorf("Ada: the creation's gate decisions %+v", d)
	}

	dir, res, evs = run("input-alan.json")
	if res.Status != trace.RunWaiting || len(res.Pending) != 1 || res.Pending[0].StepID != "welcome" ||
		!strings.Contains(res.Pending[0].Message, "rule irreversible-at-tier-3") {
		t.Fatalf("Alan: %s (%v), pending %+v; want only the welcome message waiting", res.Status, res.Error, res.Pending)
	}
	want := "customer cust-alan-turing region=eu-west active\nlink cust-alan-turing contract-2\nlink cust-alan-turing seat-9"
	if got := crmState(t, dir); got != want {
		t.Errorf("Alan: crm.state\n%s\nwant\n%s", got, want)
	}
	d := decisions(evs, "create")
	if len(d) != 1 || d[0].Verdict != "allow" {
		t.Fatalf("Alan: the creation's gate decisions %+v, want one allow", d)
	}
	var basis struct {
		Verified []struct{ Pointer, Tool, Ref, Field string }
	}
	if err := json.Unmarshal(d[0].Basis, &basis); err != nil || len(basis.Verified) != 1 ||
		basis.Verified[0].Pointer != "/region" || basis.Verified[0].Tool != "lookup_region" || basis.Verified[0].Ref != "step lookup" || basis.Verified[0].Field != "/region" {
		t.Errorf("Alan: the creation's verification %s (%v), want /region by lookup_region", d[0].Basis, err)
	}
}
