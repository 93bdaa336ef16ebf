package plan_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/internal/plan"
	"github.com/reinhq/rein/model/scripted"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// basisRecorder keeps what the gate saw of each call.
type basisRecorder struct {
	mu    sync.Mutex
	seen  map[string]safety.Basis
	calls []string
}

func (b *basisRecorder) GateDecided(at invoke.Position, inv *safety.Invocation, _ safety.Decision) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen[at.PlanStep] = safety.BasisOf(inv)
}

func (b *basisRecorder) Called(rec invoke.Record) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, rec.Tool+":"+string(rec.Outcome))
}

func crmWorld(t *testing.T) *world {
	w := &world{calls: map[string]int{}}
	w.add(t, tool.Spec{Name: "lookup_region", Effect: tool.EffectRead, Verifies: []string{"customer", "region"},
		OutputSchema: json.RawMessage(`{"type": "object", "properties": {"customer": {"type": "string"}, "region": {"type": "string"}}}`)}, func(context.Context, map[string]any) (any, error) {
		return map[string]any{"customer": "Acme Corp", "region": "eu-west"}, nil
	})
	w.add(t, tool.Spec{Name: "create_customer", Effect: tool.EffectWrite}, func(_ context.Context, a map[string]any) (any, error) {
		return map[string]any{"id": "cus_1", "name": a["name"]}, nil
	})
	return w
}

// TestPlanDeclarations runs a lookup and a creation under the default
// policy, with each outcome of the creation's declaration: missing,
// verified, unverifiable, a fact claimed from the wrong source; and a
// literal the run does not confirm.
func TestPlanDeclarations(t *testing.T) {
	t.Parallel()
	const lookup = `{"id": "lookup", "tool": "lookup_region", "args": {"customer": "Acme Corp"}}`
	create := func(args, decl string) string {
		s := `{"goal": "onboard", "steps": [` + lookup + `, {"id": "create", "tool": "create_customer", "depends_on": ["lookup"], "args": ` + args
		if decl != "" {
			s += `, "declaration": ` + decl
		}
		return s + `}]}`
	}
	const refArgs = `{"name": "Acme Corp", "region": {"$ref": "lookup.region"}}`
	fact := func(source, evidence string) string {
		return `{"action": "create the customer", "facts": [{"claim": "the customer is Acme Corp", "source": "user", "evidence": "Acme Corp"},
			{"claim": "its region", "source": "` + source + `", "evidence": "` + evidence + `"}]}`
	}
	cases := []struct {
		name    string
		plan    string
		created bool
		says    []string
	}{
		{"missing", create(refArgs, ""), false, []string{"plan step create (tool create_customer) failed: at /steps/1/declaration: tool create_customer has side effects and the step declares nothing",
			"by rule undeclared-side-effect"}},
		{"verified", create(refArgs, fact("tool:lookup_region", "EU-west")), true, nil},
		{"verified from db", create(refArgs, fact("db", "eu-west")), true, nil},
		{"unverifiable", create(refArgs, fact("tool:lookup_region", "us-east")), false, []string{
			`at /steps/1/declaration/facts/1: fact "its region" is unverified: "us-east" is not in the output of tool lookup_region`}},
		{"wrong source", create(refArgs, fact("user", "eu-west")), false, []string{
			`at /steps/1/declaration/facts/1: fact "its region" is unverified: "eu-west" is not in the user's input; it appears in the output of tool lookup_region (plan step lookup), which the user did not write`}},
		{"a literal the lookup confirms", create(`{"name": "Acme Corp", "region": "eu-west"}`, fact("db", "eu-west")), true, nil},
		{"a literal nothing confirms", create(`{"name": "Acme Corp", "region": "ap-south"}`, fact("db", "eu-west")), false, []string{
			"by rule inferred-drives-effect", "argument /region comes from inferred"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := crmWorld(t)
			rec := &basisRecorder{seen: map[string]safety.Basis{}}
			ex := w.executor(t, plan.ExecutorConfig{Gate: &safety.Policy{Rules: safety.DefaultRules()}, Recorder: rec})
			st := &plan.State{Evidence: &safety.Evidence{}}
			st.Evidence.AddUser("input", map[string]any{"customer": "Acme Corp"})
			err := ex.Execute(context.Background(), mustParse(t, c.plan), st)
			if got := w.called("create_customer") == 1; got != c.created {
				t.Fatalf("created = %v, want %v (err %v)", got, c.created, err)
			}
			if c.created {
				if err != nil {
					t.Fatal(err)
				}
				b := rec.seen["create"]
				if !b.Chosen || b.Declaration == nil || len(b.Claims) != 2 || !b.Claims[1].Supported {
					t.Fatalf("the gate saw %+v", b)
				}
				return
			}
			var se *plan.StepError
			if !errors.As(err, &se) || se.StepID != "create" || fault.ClassOf(err) != fault.Policy {
				t.Fatalf("err = %v, want a policy StepError of create", err)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error lacks %q:\n%v", s, err)
				}
			}
		})
	}
}

// TestPlanProvenanceOfLiterals: a literal the planner wrote is user when
// a field of the user's input holds it, else inferred, and verified when a
// field an earlier read verifies holds it; a $ref keeps its tool's origin.
func TestPlanProvenanceOfLiterals(t *testing.T) {
	t.Parallel()
	w := crmWorld(t)
	rec := &basisRecorder{seen: map[string]safety.Basis{}}
	gate := &safety.Policy{Rules: []safety.Rule{{Name: "watch", Tools: []string{"nothing"}, Verdict: safety.Block}}}
	ex := w.executor(t, plan.ExecutorConfig{Gate: gate, Recorder: rec})
	st := &plan.State{Evidence: &safety.Evidence{}}
	st.Evidence.AddUser("input", map[string]any{"customer": "Acme Corp"})
	p := mustParse(t, `{"goal": "g", "steps": [{"id": "lookup", "tool": "lookup_region", "args": {"customer": "Acme Corp"}},
		{"id": "create", "tool": "create_customer", "args": {"name": "acme corp", "region": "eu-west", "from": {"$ref": "lookup.customer"}, "tier": "gold"}}]}`)
	if err := ex.Execute(context.Background(), p, st); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(rec.seen["create"].Provenance)
	const want = `{"/from":["db"],"/name":["user"],"/region":["inferred"],"/tier":["inferred"]}`
	if string(got) != want {
		t.Fatalf("provenance = %s, want %s", got, want)
	}
	verified, _ := json.Marshal(rec.seen["create"].Verified)
	if want := `[{"pointer":"/region","tool":"lookup_region","ref":"plan step lookup","field":"/region"}]`; string(verified) != want {
		t.Fatalf("verified = %s, want %s", verified, want)
	}
}

func TestPlanDeclarationSourceNamesATool(t *testing.T) {
	t.Parallel()
	w := crmWorld(t)
	p := mustParse(t, `{"goal": "g", "steps": [{"id": "create", "tool": "create_customer", "args": {},
		"declaration": {"action": "a", "facts": [{"claim": "c", "source": "tool:lookup_regoin", "evidence": "eu-west"}]}}]}`)
	err := plan.Validate(p, w.catalog(t, nil, 0))
	if err == nil || !strings.Contains(err.Error(), `at /steps/0/declaration/facts/0/source: source "tool:lookup_regoin" names no tool`) ||
		!strings.Contains(err.Error(), `did you mean "lookup_region"`) {
		t.Fatalf("err = %v", err)
	}
	_, err = plan.Parse([]byte(`{"steps": [{"id": "a", "tool": "t", "declaration": {"action": "x", "facts": [{"claim": "c", "source": "guess"}]}}]}`))
	if err == nil || !strings.Contains(err.Error(), `at /steps/0/declaration/facts/0/source: source "guess" is not one the runtime records`) {
		t.Fatalf("err = %v", err)
	}
}

// TestPlannerAsksForDeclarations: the planner is told which tools have an
// effect and the declaration a step calling one carries; a catalog of
// reads alone is not.
func TestPlannerAsksForDeclarations(t *testing.T) {
	t.Parallel()
	w := crmWorld(t)
	m := &spy{m: scripted.New([]scripted.Reply{{Step: "plan", Raw: raw(`{"goal": "g", "steps": [{"id": "a", "tool": "lookup_region", "args": {}}]}`)},
		{Step: "plan", Raw: raw(`{"goal": "g", "steps": [{"id": "a", "tool": "lookup_region", "args": {}}]}`)}})}
	mp := &plan.ModelPlanner{Model: m, ModelName: "m"}
	for _, allowed := range [][]string{nil, {"lookup_region"}} {
		if _, err := mp.Plan(context.Background(), &plan.Request{Goal: "onboard", Catalog: w.catalog(t, allowed, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	all, reads := m.lastUser(0), m.lastUser(1)
	for _, want := range []string{"- create_customer\n  effect: write (a step calling it needs a declaration)", `"declaration": {"action": "...", "facts": [{"claim"`} {
		if !strings.Contains(all, want) {
			t.Errorf("prompt lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(reads, "declaration") {
		t.Errorf("a catalog of reads asks for declarations:\n%s", reads)
	}
	if !strings.Contains(string(m.reqs[0].Schema), `"declaration"`) {
		t.Error("the plan schema the model gets has no declaration")
	}
}
