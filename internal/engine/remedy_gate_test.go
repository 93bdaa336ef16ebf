package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/store"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/trace"
)

// TestRemediationThroughTheGateByRisk: a saga's compensation is assessed
// at its own risk tier (here through risk: costs on the compensating
// tool) and gets that tier's control: tier 2 is made at once; tier 3 is
// made once the reviewer finds it supported, and waits for a person when
// the reviewer does not or none is configured; tier 4 waits for a person even with a
// reviewer (who is not asked). Without risk tiers (opt-in) a compensation
// is made at once whatever its tier (here 3: half its args a model wrote).
// A person's approval makes the call. Each
// remediation record carries the tier and who let the call through.
func TestRemediationThroughTheGateByRisk(t *testing.T) {
	t.Parallel()
	const src = `name: rg
on_failure: compensate
%s
steps:
  - {id: draft, type: llm, model: m, prompt_template: "who?"}
  - {id: s, tool: make, args: {to: "%s"}}
  - {id: fail, tool: broken, args: {}}
`
	cases := []struct {
		name, config string
		to           string // the template of make's arg; "" is {input.to}
		review       bool   // the reviewer is asked
		unsupported  bool   // and finds the claim unsupported
		tier         int
		control      string // of the first remediation record
		waits        bool   // held for a person first
	}{
		{name: "tier 2: automatic", config: "risk: {min_tier: 1}", tier: 2, control: journal.ControlAutomatic},
		{name: "tiers off: made at once whatever its tier", to: "{draft}", tier: 3, control: journal.ControlAutomatic},
		{name: "tier 3 with a reviewer", config: "risk: {costs: {tools: {archive: 3}}}\nreview: {model: rev}", review: true, tier: 3, control: journal.ControlReviewer},
		{name: "tier 3, the reviewer not satisfied", config: "risk: {costs: {tools: {archive: 3}}}\nreview: {model: rev}", review: true, unsupported: true, tier: 3,
			control: journal.ControlPerson, waits: true},
		{name: "tier 3 without a reviewer", config: "risk: {costs: {tools: {archive: 3}}}", tier: 3, control: journal.ControlPerson, waits: true},
		{name: "tier 4", config: "risk: {costs: {tools: {archive: 4}}}\nreview: {model: rev}", tier: 4, control: journal.ControlPerson, waits: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rev := &recordingModel{}
			if tc.review {
				rev.m = scripted.New([]scripted.Reply{{Step: "s", Decision: "review", Output: verdicts(!tc.unsupported, "the input names ann", actionClaim("archive"))}})
			}
			rig := newRemedyRig(t, rev)
			fx, archive, st, e := rig.fx, rig.archive, rig.st, rig.e
			to := tc.to
			if to == "" {
				to = "{input.to}"
			}
			text := fmt.Sprintf(src, tc.config, to)
			res, err := e.Run(ctx, fx.parse(text), map[string]any{"to": "ann"}, &engine.RunOptions{RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			records := func() []*journal.Remediation {
				var out []*journal.Remediation
				for _, ev := range fx.events.all() {
					if ev.Kind == trace.Remediated {
						m, err := journal.DecodeRemediation(&ev)
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, m)
					}
				}
				return out
			}
			recs := records()
			if len(recs) != 1 || recs[0].Tier != tc.tier || recs[0].Control != tc.control {
				t.Fatalf("remediation records %+v, want one at tier %d, control %s", recs, tc.tier, tc.control)
			}
			if n := len(rev.requests()); n != map[bool]int{true: 1}[tc.review] {
				t.Errorf("the reviewer was asked %d times", n)
			}
			if !tc.waits {
				wantStatus(t, res, trace.RunFailed)
				if len(archive.calls()) != 1 || recs[0].Status != journal.RemedyDone {
					t.Fatalf("archive calls %v, record %+v: want the compensation made at once", archive.calls(), recs[0])
				}
				return
			}
			wantStatus(t, res, trace.RunWaiting)
			if len(archive.calls()) != 0 || recs[0].Status != journal.RemedyEscalated || len(res.Pending) != 1 ||
				res.Pending[0].StepID != "s/1/compensate" || !strings.Contains(res.Pending[0].Message, fmt.Sprintf("risk tier %d", tc.tier)) {
				t.Fatalf("archive calls %v, record %+v, pending %+v: want the compensation held for a person", archive.calls(), recs[0], res.Pending)
			}
			if _, err := st.DecideApproval(ctx, &store.DecideApprovalParams{RunID: "r", StepID: "s/1/compensate", Status: store.ApprovalApproved, DecidedBy: "ops"}); err != nil {
				t.Fatal(err)
			}
			if res, err = e.Resume(ctx, fx.parse(text), "r"); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunFailed)
			recs = records()
			last := recs[len(recs)-1]
			if len(archive.calls()) != 1 || last.Status != journal.RemedyDone || last.Control != journal.ControlPerson || last.Decision != "approved" || last.Tier != tc.tier {
				t.Fatalf("archive calls %v, last record %+v: want the approved compensation made", archive.calls(), last)
			}
		})
	}
}

// TestCheckRemediesPreviewsTheControls: before anything is remediated,
// CheckRemedies tells each compensation's tier and who would let it
// through, as TestRemediationThroughTheGateByRisk's saga then does it,
// without making the call, asking the reviewer or writing to the journal.
func TestCheckRemediesPreviewsTheControls(t *testing.T) {
	t.Parallel()
	const src = `name: rg
%s
steps:
  - {id: draft, type: llm, model: m, prompt_template: "who?"}
  - {id: s, tool: make, args: {to: "%s"}}
  - {id: fail, tool: broken, args: {}}
`
	cases := []struct {
		name, config, to string
		tier             int
		control          string
	}{
		{"tier 2", "risk: {min_tier: 1}", "{input.to}", 2, journal.ControlAutomatic},
		{"tiers off", "", "{draft}", 3, journal.ControlAutomatic},
		{"tier 3 with a reviewer", "risk: {costs: {tools: {archive: 3}}}\nreview: {model: rev}", "{input.to}", 3, journal.ControlReviewer},
		{"tier 3 without a reviewer", "risk: {costs: {tools: {archive: 3}}}", "{input.to}", 3, journal.ControlPerson},
		{"tier 4", "risk: {costs: {tools: {archive: 4}}}\nreview: {model: rev}", "{input.to}", 4, journal.ControlPerson},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			rig := newRemedyRig(t, &recordingModel{m: scripted.New(nil)})
			fx, archive, rev, st, e := rig.fx, rig.archive, rig.rev, rig.st, rig.e
			f := fx.parse(fmt.Sprintf(src, tc.config, tc.to))
			res, err := e.Run(ctx, f, map[string]any{"to": "ann"}, &engine.RunOptions{RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res, trace.RunFailed)
			var remedies []engine.Remedy
			for _, eff := range effectsOf(t, fx.events.all()) {
				remedies = append(remedies, engine.Remedy{Effect: *eff, Action: engine.Classify(eff)})
			}
			if len(remedies) != 1 || remedies[0].Action != engine.ActCompensate {
				t.Fatalf("remedies %+v, want make's compensation", remedies)
			}
			before, err := st.GetRun(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			checks, err := e.CheckRemedies(ctx, f, "r", remedies)
			if err != nil {
				t.Fatal(err)
			}
			if len(checks) != 1 || checks[0].Tier != tc.tier || checks[0].Control != tc.control ||
				!strings.Contains(checks[0].Why, fmt.Sprintf("risk tier %d", tc.tier)) {
				t.Fatalf("checks %+v, want tier %d, control %s", checks, tc.tier, tc.control)
			}
			after, err := st.GetRun(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if len(archive.calls()) != 0 || len(rev.requests()) != 0 || after.LastSeq != before.LastSeq || after.Version != before.Version {
				t.Fatalf("archive calls %v, reviewer asked %d times, journal %d→%d: a check makes nothing", archive.calls(), len(rev.requests()), before.LastSeq, after.LastSeq)
			}
		})
	}
}

// remedyRig is the set-up of the remediation tests: make (compensatable:
// archive takes its customer back) and broken (fails), a model step draft
// answering "ann", the reviewer rev registered as model "rev", a SQLite
// store and an engine over them.
type remedyRig struct {
	fx      *fixture
	archive *keyCounter
	rev     *recordingModel
	st      store.Store
	e       *engine.Engine
}

func newRemedyRig(t *testing.T, rev *recordingModel) *remedyRig {
	t.Helper()
	archive := newKeyCounter("archive", false)
	mk := tool.Func(tool.Spec{Name: "make", Effect: tool.EffectWrite, Reversibility: tool.Compensatable,
		Compensate: &tool.Compensation{Tool: "archive", Args: map[string]any{"id": "{output.id}", "who": "{args.to}"}}},
		func(_ context.Context, args any) (any, error) {
			return map[string]any{"id": "c-" + args.(map[string]any)["to"].(string)}, nil
		})
	broken := goTool("broken", func(context.Context, map[string]any) (any, error) { return nil, fault.BusinessErr(errString("down")) })
	fx := newFixture(t, mk, archive, broken)
	fx.script(scripted.Reply{Step: "draft", Output: "ann"})
	fx.models.Register("rev", rev)
	st := openSQLite(t)
	e := engine.New(engine.Config{Tools: fx.tools, Models: fx.models, Clock: fx.clock, Sink: fx.events, Store: st, Owner: "p"})
	return &remedyRig{fx: fx, archive: archive, rev: rev, st: st, e: e}
}
