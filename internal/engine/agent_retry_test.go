package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/openai"
	"github.com/reinhq/rein/trace"
)

// chatServer speaks the OpenAI chat-completions wire format: each request
// takes the next of statuses (200 answers "order 1042 is fine"); a 429
// asks for Retry-After: 3.
func chatServer(t *testing.T, statuses ...int) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		code := http.StatusOK
		if i < len(statuses) {
			code = statuses[i]
		}
		w.Header().Set("Content-Type", "application/json")
		switch code {
		case http.StatusOK:
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"finish_reason":"stop",
				"message":{"role":"assistant","content":"order 1042 is fine"}}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`)
		case http.StatusTooManyRequests:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(code)
			fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`)
		default:
			w.WriteHeader(code)
			fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// retryAgent runs a one-step agent flow (the step's extra fields given)
// against the chat server at url, on a clock that records its waits.
func retryAgent(t *testing.T, url, extra string) (*engine.Result, *fakeClock, *recorder) {
	t.Helper()
	m, err := openai.New(openai.Config{BaseURL: url + "/v1", Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	models := &model.Registry{}
	models.Register("m", m)
	reg := agentTools(t.TempDir(), "")
	src := "name: r\nsteps:\n  - {id: a, type: agent, model: m, prompt_template: \"check 1042\", tools: {status: }" + extra + "}\n"
	f, err := flow.Parse([]byte(src), "r.yaml", &flow.Options{Tools: specsOf(reg), Models: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	clock, sink := &fakeClock{}, &recorder{}
	res, err := engine.New(engine.Config{Tools: reg, Models: models, Clock: clock, Sink: sink}).Run(context.Background(), f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, clock, sink
}

// TestAgentRetriesATransientModelError: a 429 on a turn's model call is
// asked again, after the Retry-After it named (on the engine's clock),
// within the same attempt: the llm step's default retries apply.
func TestAgentRetriesATransientModelError(t *testing.T) {
	t.Parallel()
	srv, n := chatServer(t, http.StatusTooManyRequests)
	res, clock, _ := retryAgent(t, srv.URL, "")
	wantStatus(t, res, trace.RunSucceeded)
	if res.Outputs["a"] != "order 1042 is fine" || n.Load() != 2 {
		t.Fatalf("output %v after %d requests", res.Outputs["a"], n.Load())
	}
	if w := clock.Waits(); len(w) != 1 || w[0] != 3*time.Second {
		t.Errorf("waits %v, want the Retry-After (3s) once", w)
	}
	if a := res.Steps["a"]; a.Attempts != 1 || a.ModelUse().LLMCalls != 2 {
		t.Errorf("attempts %d, model calls %d: want one attempt with two model calls", a.Attempts, a.ModelUse().LLMCalls)
	}
}

// TestAgentModelRetriesAreTheSteps: retries: and backoff: of the step
// bound the model call's retries; when they run out the step fails once,
// with the model named as the error's origin.
func TestAgentModelRetriesAreTheSteps(t *testing.T) {
	t.Parallel()
	srv, n := chatServer(t, 503, 503, 503, 503)
	res, clock, sink := retryAgent(t, srv.URL, ", retries: 1, backoff: {initial: 2s, max: 2s}")
	wantStatus(t, res, trace.RunFailed)
	if n.Load() != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n.Load())
	}
	if w := clock.Waits(); len(w) != 1 || w[0] < time.Second || w[0] > 2*time.Second {
		t.Errorf("waits %v, want one backoff of 1-2s", w)
	}
	var failed []string
	for _, ev := range sink.all() {
		if ev.StepID == "a" && ev.ErrorClass != "" && (ev.Kind == trace.StepSettled || ev.Kind == trace.AttemptFailed) {
			failed = append(failed, fmt.Sprintf("%s %s from %s", ev.Kind, ev.ErrorClass, ev.Origin))
		}
	}
	want := fmt.Sprintf("%s %s from %s", trace.StepSettled, fault.Transient, trace.OriginModel)
	if len(failed) == 0 || failed[len(failed)-1] != want || strings.Count(strings.Join(failed, ","), string(trace.AttemptFailed)) > 1 {
		t.Errorf("failure events %v, want one attempt and %q", failed, want)
	}
}
