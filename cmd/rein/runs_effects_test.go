package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bin runs the built rein binary in the flow's folder with --db appended.
func (fx *durableFixture) bin(args ...string) (int, string, string) {
	fx.t.Helper()
	path, err := reinBinary()
	if err != nil {
		fx.t.Fatal(err)
	}
	cmd := exec.Command(path, append(args, "--db", fx.db)...)
	cmd.Dir = fx.dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		fx.t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// newCRM is a copy of testdata/saga with the fake CRM of
// examples/crm-onboarding (its tools/crm.sh); crm.locked there lists the
// item "locked", which the CRM refuses to unlink.
func newCRM(t *testing.T) *durableFixture {
	t.Helper()
	fx := newDurable(t, "saga")
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "crm-onboarding", "tools", "crm.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(fx.dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fx.dir, "tools", "crm.sh"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return fx
}

// crmState is the fake CRM's state file, its lines sorted (parallel
// steps write in any order).
func (fx *durableFixture) crmState() []string {
	fx.t.Helper()
	b, err := os.ReadFile(filepath.Join(fx.dir, "crm.state"))
	if err != nil {
		fx.t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	return lines
}

// TestRunsEffectsAndTheEffectGraph: the built binary runs a flow over a
// fake CRM (an exec tool with a state file); rein runs effects lists each
// call that touched the world with what it wrote, sent and read, where
// its args came from and the compensation rendered over the call, and
// rein graph --run draws the calls, the resources and the data edges.
func TestRunsEffectsAndTheEffectGraph(t *testing.T) {
	t.Parallel()
	fx := newCRM(t)
	if code, out, stderr := fx.bin("run", ".", "--input-json", `{"name": "ada", "region": "eu", "second": "b"}`); code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := fx.bin("runs", "effects", "last", "-o", "json")
	if code != exitOK {
		t.Fatalf("runs effects: exit %d\n%s", code, stderr)
	}
	var v struct {
		RunID string `json:"run_id"`
		Calls []struct {
			Key, Tool, Effect string
			Writes, Sends     []string
			Reads             []string
			Provenance        []struct {
				Pointer string
				Origins []string
			}
			Compensation *struct {
				Kind, Tool string
				Args       json.RawMessage
			}
		}
		Data []struct{ From, To string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var tools []string
	for _, c := range v.Calls {
		tools = append(tools, c.Tool)
	}
	if strings.Join(tools, " ") != "create_customer link_item link_item notify lookup_region" {
		t.Fatalf("calls %v", tools)
	}
	create, notify, check := v.Calls[0], v.Calls[3], v.Calls[4]
	if create.Key != v.RunID+"/create/1" || strings.Join(create.Writes, " ") != "crm:customer/cust-ada" ||
		create.Compensation == nil || create.Compensation.Tool != "archive_customer" || strings.Join(strings.Fields(string(create.Compensation.Args)), "") != `{"id":"cust-ada"}` {
		t.Errorf("create: %+v", create)
	}
	if strings.Join(notify.Sends, " ") != "mail:ops@example.com" || notify.Compensation != nil {
		t.Errorf("notify: %+v", notify)
	}
	if strings.Join(check.Reads, " ") != "registry:region/ada" || len(check.Provenance) != 1 || check.Provenance[0].Origins[0] != "user" {
		t.Errorf("check: %+v", check)
	}
	if len(v.Data) != 3 || v.Data[0].From != create.Key {
		t.Errorf("data edges %+v", v.Data)
	}
	code, out, _ = fx.bin("runs", "effects", "last")
	for _, want := range []string{"5 calls with an effect", "/link_a/1 link_item write reversible", "undo: unlink_item {\"customer\":\"cust-ada\",\"item\":\"a\"}", "arg /item from user"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("runs effects lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = fx.bin("graph", "--run", "last")
	for _, want := range []string{"flowchart LR", `c0["create_customer<br>write · compensatable<br>step create"]`, `r0[("crm#58;customer/cust-ada")]`,
		`c0 -->|"write"| r0`, `c0 -.->|"data"| c1`, `r4[("registry#58;region/ada")]`, `r4 -->|"read"| c4`} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("graph --run lacks %q: exit %d\n%s\n%s", want, code, out, stderr)
		}
	}
	if code, out, _ = fx.bin("graph", "--run", "last", "-o", "dot"); code != exitOK || !strings.Contains(out, `shape=cylinder`) || !strings.Contains(out, `style=dotted, class="data"`) {
		t.Errorf("graph --run -o dot: exit %d\n%s", code, out)
	}
	if code, _, stderr = fx.bin("graph", "flow.yaml", "--run", "last"); code != exitUsage {
		t.Errorf("graph PATH --run: exit %d, want usage\n%s", code, stderr)
	}
}

// TestSagaCompensatesInReverseAndEscalates: a flow with on_failure:
// compensate fails after creating a customer, linking two items and
// notifying; the built binary's run takes back what it can, in reverse
// order of completion, through the pipeline (each compensation journaled
// as a call of its own), freezes the irreversible notification and
// escalates it (tagged user-facing), and escalates the undo that fails
// instead of retrying it: the run waits. Approving the failed undo makes
// it once more (it fails again: a second escalation); rejecting and
// approving the rest lets the run end failed. The CRM's state file shows
// exactly what was taken back.
func TestSagaCompensatesInReverseAndEscalates(t *testing.T) {
	t.Parallel()
	fx := newCRM(t)
	code, out, stderr := fx.bin("run", "saga.yaml", "--input-json", `{"name": "ada", "region": "us", "second": "locked"}`, "-o", "json")
	if code != exitWaiting {
		t.Fatalf("run: exit %d, want waiting\n%s\n%s", code, out, stderr)
	}
	var res durableResult
	decodeOne(t, out, &res)
	want := []string{"customer cust-ada region=us archived", "link cust-ada locked", "notified cust-ada ops@example.com"}
	if got := fx.crmState(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("crm.state after the saga:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	code, out, _ = fx.bin("runs", "effects", res.RunID, "-o", "json")
	var v struct {
		Calls []struct {
			Key, Tool, State, Remedy string
		}
		Remediations []struct {
			Key, Action, Status, Escalation string
			Touched, Invalid                []string
		}
	}
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil {
		t.Fatalf("runs effects: exit %d %v\n%s", code, err, out)
	}
	var order []string
	for _, m := range v.Remediations {
		order = append(order, strings.TrimPrefix(m.Key, res.RunID+"/")+" "+m.Action+" "+m.Status+" "+m.Escalation)
	}
	wantOrder := []string{"notify/1 freeze escalated notify/1/freeze", "link_b/1 undo failed link_b/1/undo", "link_a/1 undo done ", "create/1 compensate done "}
	if strings.Join(order, "\n") != strings.Join(wantOrder, "\n") {
		t.Fatalf("remediations, latest completed first:\n%s\nwant:\n%s", strings.Join(order, "\n"), strings.Join(wantOrder, "\n"))
	}
	if m := v.Remediations[0]; strings.Join(m.Invalid, " ") != "mail:ops@example.com call:"+res.RunID+"/notify/1" {
		t.Errorf("the frozen notification marks %v invalid", m.Invalid)
	}
	if m := v.Remediations[3]; strings.Join(m.Touched, " ") != "crm:customer/cust-ada" {
		t.Errorf("the compensation touched %v", m.Touched)
	}
	var remedies []string
	for _, c := range v.Calls {
		if c.Remedy != "" {
			remedies = append(remedies, strings.TrimPrefix(c.Key, res.RunID+"/")+" "+c.Tool)
		}
	}
	if strings.Join(remedies, ", ") != "link_b/1/undo unlink_item, link_a/1/undo unlink_item, create/1/compensate archive_customer" {
		t.Errorf("compensation calls in the effect graph: %v", remedies)
	}

	// approved: the failed undo is made once more, fails again, and is
	// escalated again under a new id.
	if code, out, stderr = fx.bin("runs", "approve", res.RunID, "link_b/1/undo"); code != exitWaiting || !strings.Contains(out+stderr, "link_b/1/undo/2") {
		t.Fatalf("approve the failed undo: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr = fx.bin("runs", "reject", res.RunID, "link_b/1/undo/2", "--comment", "left linked, the item is locked", "--by", "ops-lead"); code != exitWaiting {
		t.Fatalf("reject the second escalation: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr = fx.bin("runs", "approve", res.RunID, "notify/1/freeze"); code != exitRunFailed {
		t.Fatalf("approve the frozen notification: exit %d, want the run failed\n%s\n%s", code, out, stderr)
	}
	if got := fx.crmState(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("crm.state at the end:\n%s", strings.Join(got, "\n"))
	}
	code, out, _ = fx.bin("runs", "effects", res.RunID)
	if code != exitOK {
		t.Errorf("runs effects: exit %d", code)
	}
	for _, want := range []string{"(saga, failed)", "link_b/1 undo link_item: resolved", "decided: rejected left linked, the item is locked (by ops-lead)", "notify/1 freeze notify: resolved"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs effects lacks %q:\n%s", want, out)
		}
	}
}

// TestImpactAndRemediate: the region a step read is the premise that
// failed. rein runs impact (built binary) classifies every executed call:
// the diamond below the premise (create → link_a, link_b → notify) is
// affected — compensate, undo, undo, freeze — and the independent branch
// is kept. rein runs remediate takes them back latest first, freezes the
// sent notification and escalates it (exit 3); the CRM's state file shows
// exactly that. Remediating again acts on nothing twice; after the person
// approves, the run is back to succeeded. An unknown premise is exit 1.
func TestImpactAndRemediate(t *testing.T) {
	t.Parallel()
	fx := newCRM(t)
	if code, out, stderr := fx.bin("run", "impact.yaml", "--input-json", `{"name": "ada"}`); code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := fx.bin("runs", "impact", "last", "--premise", "region", "-o", "json")
	if code != exitOK {
		t.Fatalf("impact: exit %d\n%s", code, stderr)
	}
	var im struct {
		RunID  string `json:"run_id"`
		Source string
		Steps  []string
		Calls  []struct {
			StepID    string `json:"step_id"`
			Action    string
			Escalates bool
			Invalid   []string
			Tier      int
			Control   string
		}
	}
	if err := json.Unmarshal([]byte(out), &im); err != nil {
		t.Fatal(err)
	}
	if im.Source != "step" || strings.Join(im.Steps, " ") != "region create link_a link_b notify" {
		t.Errorf("affected steps %v (%s)", im.Steps, im.Source)
	}
	actions := map[string]string{}
	for _, c := range im.Calls {
		actions[c.StepID] = c.Action
		if c.StepID == "notify" && (!c.Escalates || strings.Join(c.Invalid, " ") != "mail:ops@example.com") {
			t.Errorf("notify: %+v", c)
		}
		// who would let each remediation through: the flow has no risk
		// tiers, so the gate alone lets the undos and the compensation
		// through; the frozen notification goes to a person.
		want := map[string]string{"compensate": "automatic", "undo": "automatic", "freeze": "person", "keep": ""}[c.Action]
		if c.Control != want || (c.Action == "compensate" || c.Action == "undo") != (c.Tier > 0) {
			t.Errorf("%s (%s): tier %d, control %q, want control %q", c.StepID, c.Action, c.Tier, c.Control, want)
		}
	}
	if code, text, _ := fx.bin("runs", "impact", "last", "--premise", "region"); code != exitOK || !strings.Contains(text, "let through by: the gate (at once)") {
		t.Errorf("impact: exit %d, the controls not shown:\n%s", code, text)
	}
	want := map[string]string{"create": "compensate", "link_a": "undo", "link_b": "undo", "notify": "freeze", "other": "keep"}
	for step, a := range want {
		if actions[step] != a {
			t.Errorf("step %s: action %q, want %q (all: %v)", step, actions[step], a, actions)
		}
	}
	if got := fx.crmState(); len(got) != 5 {
		t.Fatalf("impact changed the CRM: %v", got)
	}

	code, out, stderr = fx.bin("runs", "remediate", "last", "--premise", "region")
	if code != exitWaiting || !strings.Contains(out, "notify/1/freeze (escalation)") {
		t.Fatalf("remediate: exit %d, want waiting\n%s\n%s", code, out, stderr)
	}
	wantState := "customer cust-ada region=eu archived\nlink cust-other x\nnotified cust-ada ops@example.com"
	if got := strings.Join(fx.crmState(), "\n"); got != wantState {
		t.Fatalf("crm.state after remediate:\n%s\nwant:\n%s", got, wantState)
	}
	code, out, _ = fx.bin("runs", "effects", "last", "-o", "json")
	var v struct {
		Remediations []struct{ Key, Action, Status string }
	}
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil {
		t.Fatal(code, err)
	}
	var order []string
	for _, m := range v.Remediations {
		order = append(order, strings.TrimPrefix(m.Key, im.RunID+"/")+" "+m.Action+" "+m.Status)
	}
	// link_a and link_b ran in parallel: either may have completed last.
	if got := strings.Join(order, ", "); got != "notify/1 freeze escalated, link_b/1 undo done, link_a/1 undo done, create/1 compensate done" &&
		got != "notify/1 freeze escalated, link_a/1 undo done, link_b/1 undo done, create/1 compensate done" {
		t.Errorf("remediations: %v", order)
	}
	if code, _, stderr = fx.bin("runs", "remediate", "last", "--premise", "region"); code != exitWaiting {
		t.Errorf("remediate again: exit %d\n%s", code, stderr)
	}
	if got := strings.Join(fx.crmState(), "\n"); got != wantState {
		t.Errorf("remediating again changed the CRM:\n%s", got)
	}
	if code, out, stderr = fx.bin("runs", "approve", "last", "notify/1/freeze", "--comment", "apology sent"); code != exitOK {
		t.Fatalf("approve the escalation: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, _ = fx.bin("runs", "show", "last"); !strings.Contains(out, "status     succeeded") {
		t.Errorf("the run after the escalation: exit %d\n%s", code, out)
	}
	if code, _, stderr = fx.bin("runs", "impact", "last", "--premise", "nope"); code != exitRunFailed || !strings.Contains(stderr, "its steps: region, create") {
		t.Errorf("unknown premise: exit %d\n%s", code, stderr)
	}
	if code, _, _ = fx.bin("runs", "impact", "last"); code != exitUsage {
		t.Errorf("impact without --premise: exit %d", code)
	}
}
