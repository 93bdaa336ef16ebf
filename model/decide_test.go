package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/value/schema"
)

// routeChoice is a typical decision type: one required field, one optional.
type routeChoice struct {
	Route  string `json:"route"`
	Reason string `json:"reason,omitempty"`
}

// fake is a model that answers with canned replies, in order, and records
// a copy of every request it gets.
type fake struct {
	mu      sync.Mutex
	replies []reply
	reqs    []model.Request
}

type reply struct {
	text  string
	usage model.Usage
	model string
	err   error
}

func newFake(replies ...reply) *fake { return &fake{replies: replies} }

// texts is a fake answering each text with usage {1, 2}.
func texts(ts ...string) *fake {
	f := &fake{}
	for _, t := range ts {
		f.replies = append(f.replies, reply{text: t, usage: model.Usage{In: 1, Out: 2}})
	}
	return f
}

func (f *fake) model() model.Model {
	return model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		cp := *req
		cp.Messages = slices.Clone(req.Messages)
		cp.Schema = slices.Clone(req.Schema)
		f.reqs = append(f.reqs, cp)
		if len(f.reqs) > len(f.replies) {
			return nil, fault.Errorf(fault.Business, "fake: unexpected call %d", len(f.reqs))
		}
		r := f.replies[len(f.reqs)-1]
		return &model.Response{Text: r.text, Usage: r.usage, Model: r.model}, r.err
	})
}

func userReq() *model.Request {
	return &model.Request{
		Model:    "gpt-4o-mini",
		StepID:   "triage",
		RunID:    "run-1",
		Decision: "route",
		Messages: []model.Message{{Role: model.User, Content: "I was charged twice"}},
	}
}

func TestDecideAcceptsFirstReply(t *testing.T) {
	t.Parallel()
	f := newFake(reply{text: `{"route":"account","reason":"billing"}`, usage: model.Usage{In: 10, Out: 5}, model: "gpt-4o-mini-2024"})
	d, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{})
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	if want := (routeChoice{Route: "account", Reason: "billing"}); d.Value != want {
		t.Errorf("Value = %+v, want %+v", d.Value, want)
	}
	if d.Calls != 1 || d.Usage != (model.Usage{In: 10, Out: 5}) || d.Model != "gpt-4o-mini-2024" || d.Text != `{"route":"account","reason":"billing"}` {
		t.Errorf("Decision = %+v", d)
	}
	if len(f.reqs) != 1 {
		t.Fatalf("model called %d times, want 1", len(f.reqs))
	}
	got := f.reqs[0]
	sch, _ := model.SchemaFor[routeChoice]()
	if string(got.Schema) != string(sch.JSON()) {
		t.Errorf("request schema = %s, want %s", got.Schema, sch.JSON())
	}
	if got.Corrective || got.StepID != "triage" || got.Decision != "route" || got.Model != "gpt-4o-mini" || got.RunID != "run-1" {
		t.Errorf("request identity lost: %+v", got)
	}
	if len(got.Messages) != 2 || got.Messages[0].Role != model.System || !reflect.DeepEqual(got.Messages[1], userReq().Messages[0]) {
		t.Fatalf("messages = %+v, want the instruction then the user turn", got.Messages)
	}
	if sys := got.Messages[0].Content; !strings.Contains(sys, "one JSON value") || !strings.Contains(sys, string(sch.JSON())) {
		t.Errorf("system message %q does not ask for JSON with the schema", sys)
	}
}

func TestDecideCorrectsProse(t *testing.T) {
	t.Parallel()
	const prose = "Sure! The route is account."
	f := texts(prose, `{"route":"account"}`)
	d, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{})
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	if d.Value.Route != "account" || d.Calls != 2 {
		t.Errorf("Decision = %+v, want route account after 2 calls", d)
	}
	if len(f.reqs) != 2 {
		t.Fatalf("model called %d times, want 2", len(f.reqs))
	}
	first, second := f.reqs[0], f.reqs[1]
	if first.Corrective || !second.Corrective {
		t.Errorf("Corrective = %v, %v; want false, true", first.Corrective, second.Corrective)
	}
	if !reflect.DeepEqual(second.Messages[:len(first.Messages)], first.Messages) || len(second.Messages) != len(first.Messages)+2 {
		t.Fatalf("corrective messages = %+v, want the first request's then two more", second.Messages)
	}
	rejected, correction := second.Messages[len(first.Messages)], second.Messages[len(first.Messages)+1]
	if !reflect.DeepEqual(rejected, model.Message{Role: model.Assistant, Content: prose}) {
		t.Errorf("rejected turn = %+v, want the prose reply as the assistant's", rejected)
	}
	if correction.Role != model.User || !strings.Contains(correction.Content, "reply is not JSON") || !strings.Contains(correction.Content, `"Sure! The route`) {
		t.Errorf("correction turn = %+v, want the parse error quoting the reply", correction)
	}
	if string(second.Schema) != string(first.Schema) || second.StepID != first.StepID {
		t.Errorf("corrective request changed schema or step: %+v", second)
	}
}

func TestDecideRejectsSecondFailure(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("€", 2000) // 6000 bytes, three per rune: 2048 is not a boundary
	f := texts("not json", long)
	d, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{})
	if fault.ClassOf(err) != fault.Format {
		t.Fatalf("err = %v (class %q), want a format error", err, fault.ClassOf(err))
	}
	var rej *model.RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("err = %T %v, want a *model.RejectedError inside", err, err)
	}
	if len(rej.Raw) > 2048 || len(rej.Raw) < 2046 || !strings.HasPrefix(long, rej.Raw) || !utf8.ValidString(rej.Raw) {
		t.Errorf("Raw has %d bytes (valid UTF-8: %v), want the reply cut to 2 KiB on a rune boundary", len(rej.Raw), utf8.ValidString(rej.Raw))
	}
	if rej.Calls != 2 || d == nil || d.Calls != 2 || len(f.reqs) != 2 {
		t.Errorf("calls: error %d, decision %v, model %d; want 2", rej.Calls, d, len(f.reqs))
	}
	if rej.Problems == nil || !strings.Contains(rej.Problems.Error(), "reply is not JSON") {
		t.Errorf("Problems = %v, want the last reply's parse error", rej.Problems)
	}
	if !strings.Contains(err.Error(), "rejected after 2 call(s)") || len(err.Error()) > 600 {
		t.Errorf("message = %q, want a short one naming the calls", err.Error())
	}
}

func TestDecideCorrections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		corrections int
		calls       int
	}{{-1, 1}, {0, 2}, {1, 2}, {2, 3}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.corrections), func(t *testing.T) {
			t.Parallel()
			f := texts("a", "b", "c", "d", "e")
			_, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{Corrections: tt.corrections})
			var rej *model.RejectedError
			if !errors.As(err, &rej) || rej.Calls != tt.calls || len(f.reqs) != tt.calls {
				t.Fatalf("err = %v after %d calls, want rejection after %d", err, len(f.reqs), tt.calls)
			}
			for i, r := range f.reqs {
				if r.Corrective != (i > 0) {
					t.Errorf("request %d: Corrective = %v", i, r.Corrective)
				}
				if want := len(f.reqs[0].Messages) + 2*i; len(r.Messages) != want {
					t.Errorf("request %d has %d messages, want %d", i, len(r.Messages), want)
				}
			}
			if rej.Raw != f.replies[tt.calls-1].text {
				t.Errorf("Raw = %q, want the last reply", rej.Raw)
			}
		})
	}
}

func TestDecideCheck(t *testing.T) {
	t.Parallel()
	routes := []string{"weather", "account", "general"}
	check := func(c routeChoice) error {
		if !slices.Contains(routes, c.Route) {
			return fmt.Errorf("at /route: %q is not one of %s", c.Route, strings.Join(routes, ", "))
		}
		return nil
	}
	f := texts(`{"route":"billing"}`, `{"route":"account"}`)
	d, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{Check: check})
	if err != nil || d.Value.Route != "account" {
		t.Fatalf("Decide = %+v, %v; want account", d, err)
	}
	last := f.reqs[1].Messages[len(f.reqs[1].Messages)-1].Content
	if !strings.Contains(last, `at /route: "billing" is not one of weather, account, general`) {
		t.Errorf("correction %q does not carry the Check error", last)
	}

	// A Check failure on the last reply is the rejection's problem.
	f = texts(`{"route":"billing"}`, `{"route":"sales"}`)
	_, err = model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{Check: check})
	var rej *model.RejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Problems.Error(), `"sales" is not one of`) {
		t.Errorf("err = %v, want the Check error of the last reply", err)
	}
}

func TestDecideStrictStruct(t *testing.T) {
	t.Parallel()
	// With the derived schema, extra properties break it.
	f := texts(`{"route":"a","confidence":0.9}`, `{"route":"a","confidence":0.9}`)
	_, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{})
	if !errors.As(err, new(*model.RejectedError)) || !strings.Contains(err.Error(), "additional properties 'confidence' not allowed") {
		t.Errorf("derived schema: err = %v, want extra property rejected", err)
	}
	// With a looser schema of the caller's, decoding still rejects it.
	loose, err := schema.Compile("loose", map[string]any{"type": "object"})
	if err != nil {
		t.Fatal(err)
	}
	f = texts(`{"route":"a","confidence":0.9}`, `{"route":"a"}`)
	d, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{Schema: loose})
	if err != nil || d.Calls != 2 {
		t.Fatalf("loose schema: Decide = %+v, %v; want the corrected reply", d, err)
	}
	if last := f.reqs[1].Messages[len(f.reqs[1].Messages)-1].Content; !strings.Contains(last, `unknown field "confidence"`) {
		t.Errorf("correction %q does not name the unknown field", last)
	}
	if string(f.reqs[0].Schema) != `{"type":"object"}` {
		t.Errorf("request schema = %s, want the given one", f.reqs[0].Schema)
	}
}

func TestDecideAny(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want any
	}{
		{`1.5`, 1.5},
		{`"text"`, "text"},
		{`null`, nil},
		{`true`, true},
		{` [1, "a"] `, []any{1.0, "a"}},
		{`{"a": {"b": []}}`, map[string]any{"a": map[string]any{"b": []any{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			f := texts(tt.text)
			d, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[any]{})
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if !reflect.DeepEqual(d.Value, tt.want) {
				t.Errorf("Value = %#v, want %#v", d.Value, tt.want)
			}
			if f.reqs[0].Schema != nil || strings.Contains(f.reqs[0].Messages[0].Content, "Schema") {
				t.Errorf("T = any sent a schema: %s / %q", f.reqs[0].Schema, f.reqs[0].Messages[0].Content)
			}
		})
	}
}

func TestDecideAnyWithRequestSchema(t *testing.T) {
	t.Parallel()
	req := userReq()
	req.Schema = json.RawMessage(`{"type":"object","required":["score"]}`)
	f := texts(`{"name":"x"}`, `{"score":3}`)
	d, err := model.Decide(context.Background(), f.model(), req, model.DecideOptions[any]{})
	if err != nil || d.Calls != 2 {
		t.Fatalf("Decide = %+v, %v; want the request's schema enforced", d, err)
	}
	if string(f.reqs[0].Schema) != `{"required":["score"],"type":"object"}` {
		t.Errorf("request schema = %s", f.reqs[0].Schema)
	}
	if last := f.reqs[1].Messages[len(f.reqs[1].Messages)-1].Content; !strings.Contains(last, "missing property 'score'") {
		t.Errorf("correction %q does not name the missing property", last)
	}
}

func TestDecideFence(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"```json\n{\"route\":\"a\"}\n```",
		"  ```JSON\n{\"route\":\"a\"}\n```\n",
		"```\n{\"route\":\"a\"}\n```",
		"```json{\"route\":\"a\"}```",
		"```{\"route\":\"a\"}```",
	} {
		d, err := model.Decide(context.Background(), texts(text).model(), userReq(), model.DecideOptions[routeChoice]{})
		if err != nil || d.Value.Route != "a" || d.Text != text {
			t.Errorf("%q: Decide = %+v, %v; want route a, Text the raw reply", text, d, err)
		}
	}
}

func TestDecideUsageSummed(t *testing.T) {
	t.Parallel()
	f := newFake(
		reply{text: "no", usage: model.Usage{In: 100, Out: 7}, model: "m-1"},
		reply{text: "still no", usage: model.Usage{In: 130, Out: 9}},
		reply{text: `{"route":"a"}`, usage: model.Usage{In: 160, Out: 11}},
	)
	d, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{Corrections: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d.Usage != (model.Usage{In: 390, Out: 27}) || d.Calls != 3 || d.Model != "m-1" {
		t.Errorf("Decision = %+v, want usage {390 27}, 3 calls, model m-1", d)
	}
}

func TestDecideModelError(t *testing.T) {
	t.Parallel()
	upstream := errors.New("upstream 503")
	for _, class := range []fault.Class{fault.Transient, fault.Business} {
		f := newFake(reply{err: fault.New(class, upstream), usage: model.Usage{In: 4}})
		d, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{})
		if !errors.Is(err, upstream) || fault.ClassOf(err) != class || errors.As(err, new(*model.RejectedError)) {
			t.Errorf("%s: err = %v (class %q), want the model's error as is", class, err, fault.ClassOf(err))
		}
		if len(f.reqs) != 1 || d == nil || d.Calls != 1 || d.Usage.In != 4 {
			t.Errorf("%s: %d calls, decision %+v; want one call, its usage kept", class, len(f.reqs), d)
		}
	}
	// A corrective call that fails returns that failure, not a rejection.
	f := newFake(reply{text: "prose"}, reply{err: fault.TransientErr(upstream)})
	_, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{})
	if !errors.Is(err, upstream) || fault.ClassOf(err) != fault.Transient {
		t.Errorf("corrective failure: err = %v, want the transient error", err)
	}
	// A model answering nothing at all is a business error, not a panic.
	nothing := model.Func(func(context.Context, *model.Request) (*model.Response, error) { return nil, nil })
	if _, err := model.Decide(context.Background(), nothing, userReq(), model.DecideOptions[any]{}); fault.ClassOf(err) != fault.Business {
		t.Errorf("nil response: err = %v, want a business error", err)
	}
	if _, err := model.Decide(context.Background(), nothing, nil, model.DecideOptions[any]{}); fault.ClassOf(err) != fault.Business {
		t.Errorf("nil request: err = %v, want a business error", err)
	}
}

func TestDecideDoesNotMutateRequest(t *testing.T) {
	t.Parallel()
	msgs := make([]model.Message, 2, 8) // spare capacity an append could write into
	msgs[0] = model.Message{Role: model.System, Content: "be brief"}
	msgs[1] = model.Message{Role: model.User, Content: "hello"}
	req := &model.Request{Model: "m", StepID: "s", Messages: msgs, Attempt: 2}
	before := *req
	before.Messages = slices.Clone(msgs)
	spare := msgs[:cap(msgs)]
	f := texts("prose", "more prose")
	if _, err := model.Decide(context.Background(), f.model(), req, model.DecideOptions[routeChoice]{}); err == nil {
		t.Fatal("Decide accepted prose")
	}
	if !reflect.DeepEqual(*req, before) {
		t.Errorf("request changed:\n got %+v\nwant %+v", *req, before)
	}
	for i, m := range spare[2:] {
		if !reflect.DeepEqual(m, model.Message{}) {
			t.Errorf("spare capacity %d written: %+v", i+2, m)
		}
	}
}

func TestDecideInstruction(t *testing.T) {
	t.Parallel()
	f := texts(`{"route":"a"}`)
	_, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[routeChoice]{Instruction: "Choose a route"})
	if err != nil {
		t.Fatal(err)
	}
	if sys := f.reqs[0].Messages[0].Content; !strings.HasPrefix(sys, "Choose a route, that satisfies this JSON Schema: {") {
		t.Errorf("system message = %q", sys)
	}
}

func TestDecideSchemaError(t *testing.T) {
	t.Parallel()
	type bad struct {
		C chan int `json:"c"`
	}
	f := texts(`{}`)
	_, err := model.Decide(context.Background(), f.model(), userReq(), model.DecideOptions[bad]{})
	if err == nil || !strings.Contains(err.Error(), "field C: a chan cannot be written as JSON") || len(f.reqs) != 0 {
		t.Errorf("err = %v after %d calls, want the schema error before any call", err, len(f.reqs))
	}
}

type candidate struct {
	Name   string   `json:"name"`
	Years  int      `json:"years"`
	Skills []string `json:"skills,omitempty"`
	Note   string   `json:"note,omitzero"`
	Hidden string   `json:"-"`
	Nested struct {
		City string `json:"city"`
	} `json:"nested"`
}

func TestSchemaForStruct(t *testing.T) {
	t.Parallel()
	sch, err := model.SchemaFor[candidate]()
	if err != nil {
		t.Fatal(err)
	}
	doc := sch.Doc.(map[string]any)
	if got := doc["required"]; !reflect.DeepEqual(got, []any{"name", "years", "nested"}) {
		t.Errorf("required = %v, want name, years, nested", got)
	}
	if doc["additionalProperties"] != false || doc["type"] != "object" {
		t.Errorf("schema = %s, want a closed object", sch.JSON())
	}
	if _, ok := doc["properties"].(map[string]any)["Hidden"]; ok {
		t.Errorf(`schema = %s has the json:"-" field`, sch.JSON())
	}
	if again, _ := model.SchemaFor[candidate](); again != sch {
		t.Error("SchemaFor did not cache the schema")
	}
	tests := []struct {
		text string
		want string // "" accepts
	}{
		{`{"name":"Zhang","years":8,"nested":{"city":"Tokyo"}}`, ""},
		{`{"name":"Zhang","years":8,"skills":["go"],"note":"n","nested":{"city":"Tokyo"}}`, ""},
		{`{"name":"Zhang","nested":{"city":"Tokyo"}}`, "at (root): missing property 'years'"},
		{`{"name":"Zhang","years":8,"nested":{"city":"Tokyo","zip":1}}`, "at /nested: additional properties 'zip' not allowed"},
		{`{"name":"Zhang","years":8,"Hidden":"x","nested":{"city":"Tokyo"}}`, "additional properties 'Hidden' not allowed"},
		{`{"name":"Zhang","years":"eight","nested":{"city":"Tokyo"}}`, "at /years: got string, want integer"},
		{`{"name":"Zhang","years":8.5,"nested":{"city":"Tokyo"}}`, "at /years: got number, want integer"},
	}
	for _, tt := range tests {
		v, err := model.ParseJSON[candidate](tt.text, sch)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.text, err)
		case tt.want == "" && (v.Name != "Zhang" || v.Nested.City != "Tokyo"):
			t.Errorf("%s: decoded %+v", tt.text, v)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err = %v, want %q", tt.text, err, tt.want)
		}
	}
}

type treeNode struct {
	Name string     `json:"name"`
	Kids []treeNode `json:"kids,omitempty"`
	Next *treeNode  `json:"next,omitempty"`
}

func TestSchemaForRecursive(t *testing.T) {
	t.Parallel()
	sch, err := model.SchemaFor[treeNode]()
	if err != nil {
		t.Fatalf("SchemaFor of a recursive type: %v", err)
	}
	if _, err := model.ParseJSON[treeNode](`{"name":"a","kids":[{"name":"b","next":{"name":"c"}}]}`, sch); err != nil {
		t.Errorf("valid tree rejected: %v", err)
	}
	_, err = model.ParseJSON[treeNode](`{"name":"a","kids":[{"name":"b","next":{"name":1}}]}`, sch)
	if err == nil || !strings.Contains(err.Error(), "at /kids/0/next/name: got number, want string") {
		t.Errorf("err = %v, want the deep violation with its pointer", err)
	}
}

func TestSchemaForOtherTypes(t *testing.T) {
	t.Parallel()
	if s, err := model.SchemaFor[any](); s != nil || err != nil {
		t.Errorf("SchemaFor[any] = %v, %v; want nil, nil", s, err)
	}
	if s, err := model.SchemaFor[fmt.Stringer](); s != nil || err != nil {
		t.Errorf("SchemaFor[fmt.Stringer] = %v, %v; want nil, nil", s, err)
	}
	for name, f := range map[string]func() (*schema.Schema, error){
		"[]string":       model.SchemaFor[[]string],
		"map[string]int": model.SchemaFor[map[string]int],
		"*routeChoice":   model.SchemaFor[*routeChoice],
		"int":            model.SchemaFor[int],
	} {
		if s, err := f(); s == nil || err != nil {
			t.Errorf("SchemaFor[%s] = %v, %v", name, s, err)
		}
	}
	if _, err := model.SchemaFor[func()](); err == nil || !strings.Contains(err.Error(), "a func cannot be written as JSON") {
		t.Errorf("SchemaFor[func()] err = %v", err)
	}
	if _, err := model.ParseJSON[candidate](`{"years":"8","nested":{"city":1}}`, nil); err == nil || !strings.Contains(err.Error(), "reply at /years: got string, want int") {
		t.Errorf("field mismatch: %v", err)
	}
	if _, err := model.ParseJSON[candidate](`{"nested":{"city":1}}`, nil); err == nil || !strings.Contains(err.Error(), "reply at /nested/city: got number, want string") {
		t.Errorf("nested field mismatch: %v", err)
	}
	if _, err := model.ParseJSON[map[string]int](`{"a":"x"}`, nil); err == nil || !strings.Contains(err.Error(), "reply: got string, want int") {
		t.Errorf("map value mismatch: %v", err)
	}
}

func TestParseJSONRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, want string
	}{
		{"empty", "  \n", "reply is empty: expected one JSON value"},
		{"empty fence", "```json\n```", "reply is empty: expected one JSON value"},
		{"prose", "Here is the answer: yes", `reply is not JSON (invalid character 'H' looking for beginning of value at byte 0): "Here is the answer: yes"`},
		{"prose after a fence", "```json\n{\"route\":\"a\"}\n```\nHope this helps!", `reply holds more than one JSON value: extra text at byte 14: "` + "```" + `\nHope this helps!"`},
		{"truncated", `{"route": "acc`, `reply is truncated JSON (it ends before the value is complete): ends with "{\"route\": \"acc"`},
		{"bad token mid-value", `{"route": acc}`, `reply is not JSON (invalid character 'a' looking for beginning of value at byte 10): "acc}"`},
		{"two values", `{"route":"a"} {"route":"b"}`, `reply holds more than one JSON value: extra text at byte 14: "{\"route\":\"b\"}"`},
		{"trailing brace", `{"route":"a"}}`, `reply holds more than one JSON value: extra text at byte 13: "}"`},
		{"trailing bracket", `{"route":"a"} ]`, `reply holds more than one JSON value: extra text at byte 14: "]"`},
		{"trailing prose", `{"route":"a"} because billing`, `reply holds more than one JSON value: extra text at byte 14: "because billing"`},
		{"numbers", `1 2`, `reply holds more than one JSON value: extra text at byte 2: "2"`},
		{"deeply nested", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "exceeded max depth"},
		{"wrong root type", `["a"]`, "reply: got array, want model_test.routeChoice"},
		{"unknown field", `{"route":"a","extra":1}`, `reply has unknown field "extra" (model_test.routeChoice has no such field)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := model.ParseJSON[routeChoice](tt.text, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to contain %s", err, tt.want)
			}
			if err != nil && len(err.Error()) > 400 {
				t.Errorf("message is %d bytes long, want a short quote", len(err.Error()))
			}
		})
	}
	// Two values are rejected for T = any too.
	if _, err := model.ParseJSON[any](`1 2`, nil); err == nil {
		t.Error("T = any accepted two values")
	}
}

func TestStripFence(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		`{"a":1}`:                  `{"a":1}`,
		"  {\"a\":1}\n":            `{"a":1}`,
		"```json\n{\"a\":1}\n```":  `{"a":1}`,
		"```jsonc\n{\"a\":1}\n```": `{"a":1}`,
		"```JSON\n{\"a\":1}\n```":  `{"a":1}`,
		"```\n[1]\n```":            `[1]`,
		"```json {\"a\":1} ```":    `{"a":1}`,
		"```json\n{\"a\":1}":       `{"a":1}`, // truncated fence
		"```{\"a\":\n1}```":        "{\"a\":\n1}",
		"text ```json\n{}\n```":    "text ```json\n{}\n```",
		"```python\nprint(1)\n```": "print(1)",
		"```json\n\"```\"\n```":    "\"```\"",
		"```":                      "",
	}
	for in, want := range tests {
		if got := model.StripFence(in); got != want {
			t.Errorf("StripFence(%q) = %q, want %q", in, got, want)
		}
	}
}
