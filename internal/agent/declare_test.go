package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/internal/agent"
	"github.com/reinhq/rein/internal/invoke"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// crm is two read tools and a write tool; create records the args it gets.
type crm struct {
	mu      sync.Mutex
	created []map[string]any
}

func (c *crm) tools() []agent.Tool {
	lookup := tool.Func(tool.Spec{Name: "lookup_customer", Effect: tool.EffectRead, Verifies: []string{"id", "region", "name"},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
		func(context.Context, any) (any, error) {
			return map[string]any{"id": "cus_981", "region": "eu-west", "name": "Acme Corp"}, nil
		})
	create := tool.Func(tool.Spec{Name: "create_customer", Effect: tool.EffectWrite,
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"},"id":{"type":"string"},"region":{"type":"string"},"admin":{"type":"string"},"plan":{"type":"string"}}}`)},
		func(_ context.Context, args any) (any, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.created = append(c.created, args.(map[string]any))
			return map[string]any{"ok": true}, nil
		})
	// notes reads free text someone wrote: it verifies nothing, so the
	// model is never sent to it to verify.
	notes := tool.Func(tool.Spec{Name: "read_notes", Effect: tool.EffectRead},
		func(context.Context, any) (any, error) { return map[string]any{"text": "the region is us-east"}, nil })
	return []agent.Tool{{Tool: lookup}, {Tool: create}, {Tool: notes}}
}

func (c *crm) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.created)
}

// TestProvenanceThroughTranscript: a scripted model looks a customer up,
// then creates it; each argument of the creation is traced to the user's
// messages (user-mentioned: free text) or nothing (inferred), and verified
// by the fields the lookup is a source of truth for; the
// declaration is taken out of the arguments, kept on the call, and the
// side-effecting tool alone is offered it.
func TestProvenanceThroughTranscript(t *testing.T) {
	t.Parallel()
	var c crm
	m := &turns{replies: []func(*model.Request) *model.Response{
		callsReply(tc("a", "lookup_customer", `{"name":"Acme Corp"}`)),
		callsReply(tc("b", "create_customer", `{"name":"ACME corp","id":"cus_981","region":"eu-west","admin":"ops@acme.example","plan":"gold",
			"declaration":{"action":"create the customer","facts":[{"claim":"its id","source":"tool:lookup_customer","evidence":"cus_981"}]}}`)),
		textReply("done"),
	}}
	j := &journal{}
	// a gate with no rules: every call is traced for it, reads included
	l := newLoop(t, agent.Config{Model: m, Journal: j, Tools: c.tools(), Pipeline: &invoke.Pipeline{Gate: &safety.Policy{}}})
	s := &agent.Session{History: []model.Message{{Role: model.User, Content: "Our admin is ops@acme.example."}}, Task: "Onboard Acme Corp."}
	if res, err := l.Run(context.Background(), s); err != nil || res.Status != agent.StatusAnswered {
		t.Fatal(res, err)
	}
	call := j.turns[1].Calls[0]
	got, _ := json.Marshal(call.Provenance)
	const want = `{"/admin":["user-mentioned"],"/id":["inferred"],"/name":["user-mentioned"],"/plan":["inferred"],"/region":["inferred"]}`
	if string(got) != want {
		t.Fatalf("provenance = %s, want %s", got, want)
	}
	verified, _ := json.Marshal(call.Verified)
	const wantVerified = `[{"pointer":"/id","tool":"lookup_customer","ref":"turn1/call1","field":"/id"},{"pointer":"/name","tool":"lookup_customer","ref":"turn1/call1","field":"/name"},{"pointer":"/region","tool":"lookup_customer","ref":"turn1/call1","field":"/region"}]`
	if string(verified) != wantVerified {
		t.Fatalf("verified = %s, want %s", verified, wantVerified)
	}
	if p, _ := json.Marshal(j.turns[0].Calls[0].Provenance); string(p) != `{"/name":["user-mentioned"]}` {
		t.Errorf("lookup provenance = %s", p)
	}
	if c.count() != 1 || c.created[0]["declaration"] != nil || c.created[0]["plan"] != "gold" {
		t.Fatalf("the tool got %+v", c.created)
	}
	if call.Declaration == nil || call.Declaration.Action != "create the customer" || len(call.Claims) != 1 || !call.Claims[0].Supported {
		t.Fatalf("declaration %+v, claims %+v", call.Declaration, call.Claims)
	}
	for _, d := range m.requests[0].Tools {
		has := strings.Contains(string(d.Schema), `"declaration"`)
		if has != (d.Name == "create_customer") {
			t.Errorf("tool %s offered a declaration: %v (%s)", d.Name, has, d.Schema)
		}
	}
}

// TestAgentDeclarations: under the default policy, a creation after a
// lookup runs only with a declaration whose facts the run confirms; a
// missing or unverifiable one, or a fact cited from the wrong source,
// costs a turn: the model is told what to verify with which tool.
func TestAgentDeclarations(t *testing.T) {
	t.Parallel()
	decl := func(source, evidence string) string {
		return `,"declaration":{"action":"create","facts":[{"claim":"the name","source":"user","evidence":"Acme Corp"},{"claim":"the region","source":"` + source + `","evidence":"` + evidence + `"}]}`
	}
	cases := []struct {
		name    string
		decl    string
		created bool
		status  agent.CallStatus
		says    []string
	}{
		{"verified", decl("tool:lookup_customer", "eu-west"), true, agent.StatusOK, nil},
		{"missing", "", false, agent.StatusBlocked, []string{`"error":"verify_first"`, `"rule":"undeclared-side-effect"`,
			`"problem":"create_customer has side effects and the call carries no declaration"`, `"verify_with":["lookup_customer"]`}},
		{"unverifiable", decl("tool:lookup_customer", "us-east"), false, agent.StatusBlocked, []string{`"claim":"the region"`,
			`\"us-east\" is not in the output of tool lookup_customer`}},
		{"wrong source", decl("user", "eu-west"), false, agent.StatusBlocked, []string{
			`it appears in the output of tool lookup_customer (turn1/call1), which the user did not write`}},
		{"malformed", `,"declaration":{"action":"create","facts":[{"claim":"c","source":"guess","evidence":"eu-west"}]}`, false, agent.StatusInvalid,
			[]string{`at /declaration/facts/0/source: source "guess" is not one the runtime records`}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c crm
			m := &turns{replies: []func(*model.Request) *model.Response{
				callsReply(tc("a", "lookup_customer", `{"name":"Acme Corp"}`)),
				callsReply(tc("b", "create_customer", `{"name":"Acme Corp","region":"eu-west"`+tt.decl+`}`)),
				textReply("done"),
			}}
			l := newLoop(t, agent.Config{Model: m, Tools: c.tools(), Pipeline: &invoke.Pipeline{Gate: &safety.Policy{Rules: safety.DefaultRules()}}})
			s := &agent.Session{Task: "Onboard Acme Corp."}
			if res, err := l.Run(context.Background(), s); err != nil || res.Status != agent.StatusAnswered {
				t.Fatal(res, err)
			}
			call := s.Turns[1].Calls[0]
			if (c.count() == 1) != tt.created || call.Status != tt.status {
				t.Fatalf("created %d, status %s: %s", c.count(), call.Status, call.Observation)
			}
			for _, w := range tt.says {
				if !strings.Contains(call.Observation, w) {
					t.Errorf("observation lacks %s:\n%s", w, call.Observation)
				}
			}
			if !tt.created {
				// the model's next turn sees it
				last := m.requests[2].Messages
				if o := last[len(last)-1]; o.Content != call.Observation || !o.IsError {
					t.Errorf("the model saw %+v", o)
				}
			}
		})
	}
}

// TestExecutePlanDeclarations: execute_plan's steps are traced to the
// transcript as agent calls are, and a side-effecting step runs only with a
// declaration the run confirms; without one the plan fails at the step's
// /declaration pointer.
func TestExecutePlanDeclarations(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		decl    string
		created bool
		says    string
	}{
		{"declared", `,"declaration":{"action":"create","facts":[{"claim":"the region","source":"db","evidence":"eu-west"}]}`, true, `"success":true`},
		{"missing", "", false, `at /steps/0/declaration: tool create_customer has side effects and the step declares nothing`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c crm
			m := &turns{replies: []func(*model.Request) *model.Response{
				callsReply(tc("a", "lookup_customer", `{"name":"Acme Corp"}`)),
				callsReply(tc("b", "execute_plan", `{"objective":"onboard","steps":[{"id":"c","tool":"create_customer","args":{"name":"Acme Corp","region":"eu-west"}`+tt.decl+`}]}`)),
				textReply("done"),
			}}
			l := newLoop(t, agent.Config{Model: m, Tools: c.tools(), ExecutePlan: &agent.PlanOptions{},
				Pipeline: &invoke.Pipeline{Gate: &safety.Policy{Rules: safety.DefaultRules()}}})
			s := &agent.Session{Task: "Onboard Acme Corp."}
			if res, err := l.Run(context.Background(), s); err != nil || res.Status != agent.StatusAnswered {
				t.Fatal(res, err)
			}
			obs := s.Turns[1].Calls[0].Observation
			if (c.count() == 1) != tt.created || !strings.Contains(obs, tt.says) {
				t.Fatalf("created %d; observation %s", c.count(), obs)
			}
		})
	}
}
