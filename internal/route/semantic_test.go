package route_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/internal/route"
	"github.com/reinhq/rein/model"
)

func TestModelSemanticChooses(t *testing.T) {
	t.Parallel()
	m := &fakeModel{t: t, replies: []string{`{"route": "account", "reason": "A double charge is a billing matter."}`}}
	r := newRouter(t, route.NewModelSemantic(m, &route.ModelOptions{Model: "gpt-4o-mini", StepID: "triage"}))
	res, err := r.Route(context.Background(), route.Request{Text: "I think I was charged twice this month", Metadata: map[string]any{"secret": "s3"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Route != "account" || res.Source != route.SourceSemantic || res.Reason != "A double charge is a billing matter." || res.Rule != nil {
		t.Fatalf("got %+v", res)
	}
	if res.Usage != (model.Usage{In: 10, Out: 5}) {
		t.Errorf("usage %+v, want the model's", res.Usage)
	}
	if m.calls() != 1 {
		t.Fatalf("model called %d times, want 1", m.calls())
	}
	req := m.reqs[0]
	if req.Model != "gpt-4o-mini" || req.StepID != "triage" || req.Corrective {
		t.Errorf("request model %q step %q corrective %v", req.Model, req.StepID, req.Corrective)
	}
	if req.Prompt() != "I think I was charged twice this month" {
		t.Errorf("user prompt %q, want the request text only", req.Prompt())
	}
	system := req.Messages[0].Content
	for _, want := range []string{"- weather: Weather questions for a city\n", "- account: Billing, charges, refunds, login\n", "- general: Anything else (rewrites, summaries)\n"} {
		if !strings.Contains(system, want) {
			t.Errorf("system message lacks %q:\n%s", want, system)
		}
	}
	if strings.Contains(system, "s3") || strings.Contains(req.Prompt(), "s3") {
		t.Error("metadata was sent to the model")
	}
	var sch struct {
		Properties struct {
			Route  struct{ Enum []string }
			Reason struct{ MinLength int }
		}
		Required             []string
		AdditionalProperties *bool
	}
	if err := json.Unmarshal(req.Schema, &sch); err != nil {
		t.Fatal(err)
	}
	if strings.Join(sch.Properties.Route.Enum, ",") != "weather,account,general" || sch.Properties.Reason.MinLength != 1 ||
		strings.Join(sch.Required, ",") != "route,reason" || sch.AdditionalProperties == nil || *sch.AdditionalProperties {
		t.Errorf("schema %s", req.Schema)
	}
}

func TestModelSemanticCorrectsThenAccepts(t *testing.T) {
	t.Parallel()
	m := &fakeModel{t: t, replies: []string{
		`{"route": "billing", "reason": "a charge"}`,
		`{"route": "account", "reason": "a charge"}`,
	}}
	res, err := newRouter(t, route.NewModelSemantic(m, nil)).Route(context.Background(), route.Request{Text: "charged twice"})
	if err != nil || res.Route != "account" {
		t.Fatalf("got %+v, %v", res, err)
	}
	if m.calls() != 2 || !m.reqs[1].Corrective {
		t.Fatalf("calls %d, want a corrective second call", m.calls())
	}
	if res.Usage.In != 20 {
		t.Errorf("usage %+v, want both calls counted", res.Usage)
	}
}

func TestModelSemanticOutsideSetCorrectedThenRejected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		replies []string
		want    []string // in the corrective request and the final error
	}{
		{"route outside the set", []string{`{"route": "billing", "reason": "a charge"}`, `{"route": "refunds", "reason": "a charge"}`},
			// The schema's enum rejects it before Check runs; the
			// rejected reply itself is the assistant turn before.
			[]string{"at /route: value must be one of 'weather', 'account', 'general'"}},
		{"missing reason", []string{`{"route": "account"}`, `{"route": "account"}`},
			[]string{"reason"}},
		{"blank reason", []string{`{"route": "account", "reason": "   "}`, `{"route": "account", "reason": "  "}`},
			[]string{"/reason: the reason is empty"}},
		{"empty reason", []string{`{"route": "account", "reason": ""}`, `{"route": "account", "reason": ""}`},
			[]string{"/reason"}},
		{"extra field", []string{`{"route": "account", "reason": "x", "confidence": 0.9}`, `{"route": "account", "reason": "x", "confidence": 0.9}`},
			[]string{"confidence"}},
		{"prose", []string{"It is account.", "Account, because billing."}, []string{"not JSON"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &fakeModel{t: t, replies: tc.replies}
			res, err := newRouter(t, route.NewModelSemantic(m, nil)).Route(context.Background(), route.Request{Text: "charged twice"})
			if err == nil {
				t.Fatalf("accepted %+v", res)
			}
			if fault.ClassOf(err) != fault.Format {
				t.Fatalf("class %s, want format: %v", fault.ClassOf(err), err)
			}
			var rej *model.RejectedError
			if !errors.As(err, &rej) || rej.Calls != 2 || rej.Raw != tc.replies[1] {
				t.Fatalf("error %v, want a *model.RejectedError after 2 calls with the raw reply", err)
			}
			if m.calls() != 2 || !m.reqs[1].Corrective {
				t.Fatalf("calls %d, want exactly one corrective request", m.calls())
			}
			msgs := m.reqs[1].Messages
			if prev := msgs[len(msgs)-2]; prev.Role != model.Assistant || prev.Content != tc.replies[0] {
				t.Errorf("corrective request does not carry the rejected reply: %+v", prev)
			}
			correction := msgs[len(msgs)-1].Content
			for _, w := range tc.want {
				if !strings.Contains(correction, w) {
					t.Errorf("corrective request lacks %q:\n%s", w, correction)
				}
			}
			if res.Route != "" {
				t.Fatalf("rejected reply still routed to %q", res.Route)
			}
		})
	}
}

func TestModelSemanticNoCorrections(t *testing.T) {
	t.Parallel()
	m := &fakeModel{t: t, replies: []string{`{"route": "billing", "reason": "x"}`}}
	_, err := route.NewModelSemantic(m, &route.ModelOptions{Corrections: -1}).Choose(context.Background(), route.Request{Text: "x"}, testRoutes)
	if fault.ClassOf(err) != fault.Format || m.calls() != 1 {
		t.Fatalf("got %v after %d calls, want a format error after 1", err, m.calls())
	}
}

func TestModelSemanticModelError(t *testing.T) {
	t.Parallel()
	m := model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		return nil, fault.TransientErr(errors.New("503 from provider"))
	})
	_, err := newRouter(t, route.NewModelSemantic(m, nil)).Route(context.Background(), route.Request{Text: "x"})
	if fault.ClassOf(err) != fault.Transient || !strings.Contains(err.Error(), "503") {
		t.Fatalf("got %v (class %s), want the transient model error", err, fault.ClassOf(err))
	}
}

func TestScriptedUnknownText(t *testing.T) {
	t.Parallel()
	s := route.ScriptedMap(map[string]route.Choice{"a": {Route: "general", Reason: "r"}})
	_, err := newRouter(t, s).Route(context.Background(), route.Request{Text: "b"})
	if fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), `no choice for "b"`) {
		t.Fatalf("got %v", err)
	}
}

func TestInstructionAndSchema(t *testing.T) {
	t.Parallel()
	got := route.Instruction([]route.Route{{Name: "a", Description: "first\n  line"}, {Name: "b", Description: "second"}})
	if !strings.Contains(got, "- a: first line\n- b: second\n") {
		t.Fatalf("instruction:\n%s", got)
	}
	want := `{"additionalProperties":false,"properties":{"reason":{"description":"why the request belongs to this route, in one sentence","minLength":1,"type":"string"},"route":{"description":"the name of the chosen route","enum":["a","b"],"type":"string"}},"required":["route","reason"],"type":"object"}`
	if s := string(route.ChoiceSchema([]route.Route{{Name: "a"}, {Name: "b"}})); s != want {
		t.Fatalf("schema\n got %s\nwant %s", s, want)
	}
}

// One semantic router asked over two route sets whose names join to the
// same text must not reuse the first set's schema for the second.
func TestModelSemanticSchemaPerRouteSet(t *testing.T) {
	t.Parallel()
	m := &fakeModel{t: t, replies: []string{`{"route": "a, b", "reason": "one route"}`, `{"route": "a", "reason": "two routes"}`}}
	s := route.NewModelSemantic(m, &route.ModelOptions{Corrections: -1})
	ctx := context.Background()
	if _, err := s.Choose(ctx, route.Request{Text: "x"}, []route.Route{{Name: "a, b", Description: "one"}}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Choose(ctx, route.Request{Text: "x"}, []route.Route{{Name: "a", Description: "first"}, {Name: "b", Description: "second"}})
	if err != nil || c.Route != "a" {
		t.Fatalf("got %+v, %v; want route a (the schema of the other route set was used?)", c, err)
	}
}
