package scripted

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

func req(step, mdl, prompt string) *model.Request {
	return &model.Request{StepID: step, Model: mdl, Messages: []model.Message{
		{Role: model.System, Content: "ignored by Prompt"},
		{Role: model.User, Content: prompt},
	}}
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	const script = `replies:
  - step: extract_info
    output: {"name": "Zhang <Z>", "years": 8}
  - step: score_candidate
    raw: "not json"
  - step: score_candidate
    error: transient
    message: "upstream 503"
    tokens: {in: 120, out: 30}
  - step: score_candidate
    model: gpt-4o
    output: {"score": 72}
  - step: score_candidate
    contains: "Zhang"
    output: {"score": 90}
  - step: score_candidate
    error: business
`
	type want struct {
		text  string
		usage model.Usage
		class fault.Class // Unclassified: success
		msg   string      // the error's message, exactly
	}
	// The calls run in order against one model: each consumes a reply.
	calls := []struct {
		name string
		req  *model.Request
		want want
	}{
		{"output as compact JSON", req("extract_info", "m", "resume text"), want{text: `{"name":"Zhang <Z>","years":8}`, usage: model.Usage{In: 3, Out: 8}}},
		{"raw text", req("score_candidate", "m", "abcde"), want{text: "not json", usage: model.Usage{In: 2, Out: 2}}},
		{"transient error with tokens", req("score_candidate", "m", "p"), want{usage: model.Usage{In: 120, Out: 30}, class: fault.Transient, msg: `scripted model: step "score_candidate", replies[2]: upstream 503`}},
		{"contains skips the model-filtered reply", req("score_candidate", "gpt-4o-mini", "about Zhang"), want{text: `{"score":90}`, usage: model.Usage{In: 3, Out: 3}}},
		{"model filter", req("score_candidate", "gpt-4o", ""), want{text: `{"score":72}`, usage: model.Usage{In: 0, Out: 3}}},
		{"business error, default message", req("score_candidate", "gpt-4o", ""), want{class: fault.Business, msg: `scripted model: step "score_candidate", replies[5]: scripted business error`}},
		{"all used", req("score_candidate", "gpt-4o", ""), want{class: fault.Business, msg: `scripted model: no unused reply for step "score_candidate" (script has 5 replies for it, all used)`}},
		{"unknown step", req("notify", "", ""), want{class: fault.Business, msg: `scripted model: no unused reply for step "notify" (script has no reply for step "notify")`}},
		{"all used, first step", req("extract_info", "", ""), want{class: fault.Business, msg: `scripted model: no unused reply for step "extract_info" (script has 1 replies for it, all used)`}},
	}
	m, err := Parse([]byte(script), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		resp, err := m.Generate(context.Background(), c.req)
		if c.want.class != fault.Unclassified {
			if err == nil || fault.ClassOf(err) != c.want.class || err.Error() != c.want.msg {
				t.Errorf("call %d (%s): err = %v (class %q), want %q (class %q)", i, c.name, err, fault.ClassOf(err), c.want.msg, c.want.class)
			}
			if resp != nil && resp.Usage != c.want.usage {
				t.Errorf("call %d (%s): usage with error = %+v, want %+v", i, c.name, resp.Usage, c.want.usage)
			}
			continue
		}
		if err != nil {
			t.Errorf("call %d (%s): %v", i, c.name, err)
			continue
		}
		if resp.Text != c.want.text || resp.Usage != c.want.usage {
			t.Errorf("call %d (%s): got %q %+v, want %q %+v", i, c.name, resp.Text, resp.Usage, c.want.text, c.want.usage)
		}
	}
	if got := m.Calls(); got != len(calls) {
		t.Errorf("Calls() = %d, want %d", got, len(calls))
	}
	if u := m.Unused(); len(u) != 0 {
		t.Errorf("Unused() = %+v, want none", u)
	}
}

func TestGenerateFilterMismatch(t *testing.T) {
	t.Parallel()
	m := New([]Reply{
		{Step: "a", Raw: strp("first")},
		{Step: "a", Model: "big", Raw: strp("big")},
		{Step: "a", Contains: "needle", Raw: strp("needle")},
		{Step: "b", Raw: strp("b")},
	})
	ctx := context.Background()
	if resp, err := m.Generate(ctx, req("a", "small", "hay")); err != nil || resp.Text != "first" {
		t.Fatalf("first call = %v, %v; want \"first\"", resp, err)
	}
	_, err := m.Generate(ctx, req("a", "small", "hay"))
	want := `scripted model: no unused reply for step "a" (script has 3 replies for it, 1 used; the other 2 want another model or prompt than model "small" and this prompt)`
	if err == nil || err.Error() != want || fault.ClassOf(err) != fault.Business {
		t.Errorf("err = %v, want business %q", err, want)
	}
	unused := m.Unused()
	var steps []string
	for _, r := range unused {
		steps = append(steps, *r.Raw)
	}
	if got := strings.Join(steps, ","); got != "big,needle,b" {
		t.Errorf("Unused() = %s, want big,needle,b (script order)", got)
	}
}

func TestGenerateNilOutputAndRequest(t *testing.T) {
	t.Parallel()
	m := New([]Reply{{Step: "a"}, {Step: "a", Output: func() {}}})
	resp, err := m.Generate(context.Background(), req("a", "", ""))
	if err != nil || resp.Text != "null" {
		t.Errorf("nil output = %v, %v; want text null", resp, err)
	}
	if _, err := m.Generate(context.Background(), req("a", "", "")); fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "replies[1]: output is not JSON") {
		t.Errorf("unencodable output: err = %v, want a business error naming replies[1]", err)
	}
	if _, err := m.Generate(context.Background(), nil); fault.ClassOf(err) != fault.Business {
		t.Errorf("nil request: err = %v, want a business error", err)
	}
}

// endsOnUse is a context that ends with err once m has consumed a reply:
// "during the delay" without racing the scheduler (a timer armed before
// Generate runs can fire before it is entered on a loaded machine, and a
// context done on entry consumes nothing).
type endsOnUse struct {
	context.Context
	done chan struct{}
	err  error
}

func newEndsOnUse(m *Model, err error) (*endsOnUse, context.CancelFunc) {
	c := &endsOnUse{Context: context.Background(), done: make(chan struct{}), err: err}
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for len(m.Unused()) == 2 {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
		close(c.done)
	}()
	var once sync.Once
	return c, func() { once.Do(func() { close(stop) }) }
}

func (c *endsOnUse) Done() <-chan struct{} { return c.done }

func (c *endsOnUse) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

func TestGenerateContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		ctx        func(m *Model) (context.Context, context.CancelFunc)
		delay      time.Duration
		class      fault.Class
		is         error
		wantUnused int // of the two replies
	}{
		{
			name: "deadline during delay is transient",
			ctx: func(m *Model) (context.Context, context.CancelFunc) {
				return newEndsOnUse(m, context.DeadlineExceeded)
			},
			delay: 10 * time.Second, class: fault.Transient, is: context.DeadlineExceeded, wantUnused: 1,
		},
		{
			name: "cancel during delay",
			ctx: func(m *Model) (context.Context, context.CancelFunc) {
				return newEndsOnUse(m, context.Canceled)
			},
			delay: 10 * time.Second, class: fault.Cancelled, is: context.Canceled, wantUnused: 1,
		},
		{
			name: "a real deadline ends the delay",
			ctx: func(*Model) (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 20*time.Millisecond)
			},
			// before or after entry, depending on the scheduler: both end in
			// a transient error, which is what this case checks.
			delay: 10 * time.Second, class: fault.Transient, is: context.DeadlineExceeded, wantUnused: -1,
		},
		{
			name: "done on entry consumes nothing",
			ctx: func(*Model) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			class: fault.Cancelled, is: context.Canceled, wantUnused: 2,
		},
		{
			name: "short delay answers",
			ctx: func(*Model) (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 10*time.Second)
			},
			delay: time.Millisecond, wantUnused: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := New([]Reply{{Step: "a", Delay: tt.delay, Raw: strp("slow")}, {Step: "a", Raw: strp("fast")}})
			ctx, cancel := tt.ctx(m)
			defer cancel()
			start := time.Now()
			resp, err := m.Generate(ctx, req("a", "", ""))
			if time.Since(start) > 5*time.Second {
				t.Errorf("Generate took %v: it did not honour ctx", time.Since(start))
			}
			if tt.is == nil {
				if err != nil || resp.Text != "slow" {
					t.Errorf("got %v, %v; want slow", resp, err)
				}
			} else if !errors.Is(err, tt.is) || fault.ClassOf(err) != tt.class {
				t.Errorf("err = %v (class %q), want %v (class %q)", err, fault.ClassOf(err), tt.is, tt.class)
			}
			if got := len(m.Unused()); tt.wantUnused >= 0 && got != tt.wantUnused {
				t.Errorf("unused = %d, want %d", got, tt.wantUnused)
			}
			if m.Calls() != 1 {
				t.Errorf("Calls() = %d, want 1", m.Calls())
			}
		})
	}
}

func TestGenerateConcurrent(t *testing.T) {
	t.Parallel()
	const n = 50
	replies := make([]Reply, n)
	for i := range replies {
		replies[i] = Reply{Step: "a", Output: i}
	}
	m := New(replies)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	for range n + 5 {
		wg.Go(func() {
			resp, err := m.Generate(context.Background(), req("a", "", ""))
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[resp.Text] {
				t.Errorf("reply %s answered twice", resp.Text)
			}
			seen[resp.Text] = true
		})
	}
	wg.Wait()
	if len(seen) != n || len(m.Unused()) != 0 || m.Calls() != n+5 {
		t.Errorf("answered %d distinct, %d unused, %d calls; want %d, 0, %d", len(seen), len(m.Unused()), m.Calls(), n, n+5)
	}
	for i := range n {
		if !seen[fmt.Sprint(i)] {
			t.Errorf("reply %d never answered", i)
		}
	}
}

func TestGenerateDecisions(t *testing.T) {
	t.Parallel()
	const script = `replies:
  - step: triage
    decision: plan
    plan: {goal: "never: the router does not plan", steps: []}
  - step: triage
    decision: route
    route: account
    reason: "charged <twice> & more"
  - step: triage
    decision: llm
    output: {"summary": "s"}
  - step: brief
    plan:
      steps: [{id: w, tool: read_weather, args: {city: Tokyo}}]
      goal: Tokyo
  - step: brief
    decision: route
    route: general
    reason: r
`
	m, err := Parse([]byte(script), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ask := func(step, decision string) (*model.Response, error) {
		r := req(step, "m", "I was charged twice")
		r.Decision = decision
		return m.Generate(context.Background(), r)
	}
	calls := []struct {
		name, step, decision, text, err string
	}{
		{"route decision skips the plan reply", "triage", "route", `{"route":"account","reason":"charged <twice> & more"}`, ""},
		{"llm matches the empty decision", "triage", "", `{"summary":"s"}`, ""},
		{"plan as compact JSON, keys sorted", "brief", "plan", `{"goal":"Tokyo","steps":[{"args":{"city":"Tokyo"},"id":"w","tool":"read_weather"}]}`, ""},
		{"only a plan reply is left for triage", "triage", "route", "", `scripted model: no unused reply for step "triage" (script has 3 replies for it, 2 used; the other 1 want another decision, model or prompt than decision route, model "m" and this prompt)`},
		{"decision named llm in messages", "brief", "", "", `scripted model: no unused reply for step "brief" (script has 2 replies for it, 1 used; the other 1 want another decision, model or prompt than decision llm, model "m" and this prompt)`},
		{"the route reply for brief", "brief", "route", `{"route":"general","reason":"r"}`, ""},
	}
	for _, c := range calls {
		resp, err := ask(c.step, c.decision)
		if c.err != "" {
			if err == nil || err.Error() != c.err || fault.ClassOf(err) != fault.Business {
				t.Errorf("%s: err = %v\nwant business %s", c.name, err, c.err)
			}
			continue
		}
		if err != nil || resp.Text != c.text {
			t.Errorf("%s: got %v, %v; want %s", c.name, resp, err, c.text)
		}
	}
	// What the scripted router answers is what Decide accepts.
	type choice struct {
		Route  string `json:"route"`
		Reason string `json:"reason"`
	}
	sch, err := model.SchemaFor[choice]()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := model.ParseJSON[choice](`{"route":"account","reason":"charged <twice> & more"}`, sch); err != nil || v.Route != "account" {
		t.Errorf("route answer does not decode: %+v, %v", v, err)
	}
}

func TestGenerateGoRepliesPrecedence(t *testing.T) {
	t.Parallel()
	m := New([]Reply{
		{Step: "a", Route: "r", Reason: "why", Plan: map[string]any{"goal": "g"}, Output: 1},
		{Step: "a", Plan: map[string]any{"goal": "g"}, Output: 1},
		{Step: "a", Raw: strp("raw"), Route: "r"},
		{Step: "a", Error: fault.Transient, Route: "r"},
		{Step: "a", Plan: func() {}},
		{Step: "a", Decision: "bogus", Output: 1},
	})
	wants := []string{`{"route":"r","reason":"why"}`, `{"goal":"g"}`, "raw"}
	for i, want := range wants {
		if resp, err := m.Generate(context.Background(), req("a", "", "")); err != nil || resp.Text != want {
			t.Errorf("reply %d: %v, %v; want %s", i, resp, err, want)
		}
	}
	if _, err := m.Generate(context.Background(), req("a", "", "")); fault.ClassOf(err) != fault.Transient {
		t.Errorf("error reply: %v", err)
	}
	if _, err := m.Generate(context.Background(), req("a", "", "")); err == nil || !strings.Contains(err.Error(), "replies[4]: plan is not JSON") {
		t.Errorf("unencodable plan: %v", err)
	}
	if _, err := m.Generate(context.Background(), req("a", "", "")); err == nil || !strings.Contains(err.Error(), "want another decision") {
		t.Errorf("unknown decision filter: %v, want it never to match", err)
	}
}

// TestRunsUseTheirOwnReplies: by default the calls of every run go
// through the script in order (a session's runs); under ByRun one Model
// serving many runs (a Temporal worker) answers each run from the whole
// script; Unused lists what no run used; past MaxRuns the oldest run is
// forgotten, not the newest.
func TestRunsUseTheirOwnReplies(t *testing.T) {
	t.Parallel()
	replies := []Reply{{Step: "a", Raw: ptr("first")}, {Step: "a", Raw: ptr("second")}, {Step: "b", Raw: ptr("never")}}
	shared := New(replies)
	for i, run := range []string{"r1", "r2"} {
		r := req("a", "m", "p")
		r.RunID = run
		resp, err := shared.Generate(context.Background(), r)
		if want := *replies[i].Raw; err != nil || resp.Text != want {
			t.Fatalf("shared, run %s: %v %v, want %s", run, resp, err, want)
		}
	}
	m := New(replies)
	m.ByRun()
	ask := func(run string) (string, error) {
		r := req("a", "m", "p")
		r.RunID = run
		resp, err := m.Generate(context.Background(), r)
		if err != nil {
			return "", err
		}
		return resp.Text, nil
	}
	for _, run := range []string{"r1", "r2", "r1", "r2"} {
		if _, err := ask(run); err != nil {
			t.Fatalf("run %s: %v", run, err)
		}
	}
	if _, err := ask("r1"); err == nil || !strings.Contains(err.Error(), "all used") {
		t.Errorf("a third call of run r1: %v, want the replies all used", err)
	}
	if got, err := ask("r3"); err != nil || got != "first" {
		t.Errorf("a new run's first call: %q, %v; want first", got, err)
	}
	if u := m.Unused(); len(u) != 1 || u[0].Step != "b" {
		t.Errorf("Unused = %+v, want the reply of step b only", u)
	}
	for i := range MaxRuns {
		if _, err := ask(fmt.Sprintf("x%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ask("r1"); err != nil || got != "first" {
		t.Errorf("run r1 after %d newer runs: %q, %v; want it forgotten (first)", MaxRuns, got, err)
	}
	if got, err := ask(fmt.Sprintf("x%d", MaxRuns-1)); err != nil || got != "second" {
		t.Errorf("the newest run's second call: %q, %v; want second", got, err)
	}
}

func ptr(s string) *string { return &s }
