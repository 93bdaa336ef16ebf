package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
)

// Provider is what the suite needs to know about one adapter.
type Provider struct {
	// New builds the adapter under test, talking to baseURL (an httptest
	// server's URL, no trailing slash) with apiKey. The adapter must not
	// ask for a model of its own: the suite names one in each request.
	New func(baseURL, apiKey string) model.Model
	// KeyEnv is the environment variable the adapter names when the
	// server refuses the key (401).
	KeyEnv string
	// Wire is the provider's wire format.
	Wire Wire
}

// Wire is a provider's wire format as test fixtures. Every field is
// required.
type Wire struct {
	// Path is the URL path the adapter must POST to, relative to the
	// server root (e.g. "/chat/completions", "/v1/messages").
	Path string
	// CheckRequest returns an error saying what is wrong when the HTTP
	// request (headers, decoded body) does not carry req the provider's
	// way: req.Model, the messages in order with system messages where
	// the provider wants them, apiKey in the provider's auth header, and
	// req.Schema (when set) as the provider's structured-output request.
	CheckRequest func(r *http.Request, body []byte, req *model.Request, apiKey string) error
	// Text writes a complete plain-text reply.
	Text func(w http.ResponseWriter, r Reply)
	// Structured writes a complete structured reply: r.Answer put where
	// the provider puts a structured answer, in the shape the request
	// asked for (a strict schema's absent optional properties as null,
	// say). body is the request the adapter sent.
	Structured func(w http.ResponseWriter, body []byte, r Reply)
	// Truncated writes a reply cut off by the token limit, r.Text being
	// the partial output.
	Truncated func(w http.ResponseWriter, r Reply)
	// Refusal writes a reply in which the model declines, r.Text being
	// its explanation.
	Refusal func(w http.ResponseWriter, r Reply)
	// Error writes the provider's error response for status with message.
	// Headers the suite set before (Retry-After) must be kept.
	Error func(w http.ResponseWriter, status int, message string)
	// ToolCalls writes a complete reply in which the model calls r.Calls,
	// in order (each call's Args as the model wrote them, JSON or not),
	// after the text r.Text when it is not empty.
	ToolCalls func(w http.ResponseWriter, r Reply)
	// ArgsOnWire, when set, returns the Args a faithful adapter reports
	// for a call the fixture wrote with args that are not JSON (a wire
	// that carries arguments as JSON carries such text as a JSON string).
	// Nil means the args themselves.
	ArgsOnWire func(args string) string
}

// Reply is what a fixture is asked to answer.
type Reply struct {
	// Model is the model name the server reports having used.
	Model string
	// Text is the reply text (Text, Truncated) or the explanation
	// (Refusal).
	Text string
	// Answer is the structured answer, optional properties absent.
	Answer json.RawMessage
	// Schema is the schema the request asked for.
	Schema json.RawMessage
	// In and Out are the token counts to report.
	In, Out int
	// Calls are the tool calls to answer with (ToolCalls).
	Calls []model.ToolCall
}

// The values the suite uses; fixtures may reuse them in their own tests.
const (
	// APIKey is the key the suite hands New. It must never appear in any
	// error text.
	APIKey = "sk-modeltest-0123456789/SECRET+abcdef"
	// RequestModel is the model every request names.
	RequestModel = "test-model"
	// ServedModel is the model the server reports having used.
	ServedModel = "test-model-2025-01-01"
)

// Schema is the structured-output schema of the suite: "confidence" is
// optional, so strict providers see it made nullable.
var Schema = json.RawMessage(`{"type":"object","properties":{"route":{"type":"string","enum":["weather","account","general"]},"reason":{"type":"string"},"confidence":{"type":"number"}},"required":["route","reason"],"additionalProperties":false}`)

// Answer is the structured answer the suite's fixtures give.
var Answer = json.RawMessage(`{"route":"account","reason":"a double charge is a billing matter"}`)

// Run runs the conformance suite against p. Subtests run in parallel, each
// against its own server.
func Run(t *testing.T, p Provider) {
	t.Helper()
	if p.New == nil || p.KeyEnv == "" || p.Wire.Path == "" || p.Wire.CheckRequest == nil ||
		p.Wire.Text == nil || p.Wire.Structured == nil || p.Wire.Truncated == nil ||
		p.Wire.Refusal == nil || p.Wire.Error == nil || p.Wire.ToolCalls == nil {
		t.Fatal("modeltest: Provider needs New, KeyEnv and every Wire field")
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, p)
		})
	}
}

type scenario struct {
	name string
	run  func(t *testing.T, p Provider)
}

var scenarios = []scenario{
	{"text", testText},
	{"usage", testUsage},
	{"model_name", testModelName},
	{"structured", testStructured},
	{"truncated", testTruncated},
	{"refusal", testRefusal},
	{"rate_limited", testRateLimited},
	{"server_errors", testServerErrors},
	{"network_error", testNetworkError},
	{"bad_request", testBadRequest},
	{"unauthorized", testUnauthorized},
	{"hang", testHang},
	{"cancelled", testCancelled},
	{"key_never_in_errors", testKeyNeverInErrors},
	{"concurrent", testConcurrent},
	{"tool_call", testToolCall},
	{"parallel_tool_calls", testParallelToolCalls},
	{"malformed_tool_arguments", testMalformedArguments},
	{"unknown_tool", testUnknownTool},
	{"tool_results_then_answer", testToolResults},
	{"tool_choice", testToolChoice},
	{"usage_across_turns", testUsageAcrossTurns},
	{"too_many_tool_calls", testTooManyToolCalls},
	{"bad_tool_request", testBadToolRequest},
}

// conversation is the request of most scenarios: every role, system first.
func conversation() *model.Request {
	return &model.Request{
		Model: RequestModel,
		Messages: []model.Message{
			{Role: model.System, Content: "You are a terse assistant."},
			{Role: model.User, Content: "Say hello."},
			{Role: model.Assistant, Content: "Hello."},
			{Role: model.User, Content: "Again, in French."},
		},
		RunID: "run-1", StepID: "greet", Attempt: 1,
	}
}

func structuredRequest() *model.Request {
	req := conversation()
	req.Messages = []model.Message{
		{Role: model.System, Content: "Reply with one JSON value only, no prose, that satisfies this JSON Schema: " + string(Schema)},
		{Role: model.User, Content: "I think I was charged twice this month"},
	}
	req.Schema = Schema
	return req
}

// server is an httptest server that checks each request and answers with
// handle. Requests counts the calls that reached it.
type server struct {
	*httptest.Server
	requests atomic.Int32
	release  chan struct{}
}

func newServer(t *testing.T, p Provider, req *model.Request, handle func(w http.ResponseWriter, body []byte)) *server {
	t.Helper()
	return newTurnServer(t, p, []*model.Request{req}, func(w http.ResponseWriter, _ int, body []byte) { handle(w, body) })
}

// newTurnServer is a server for a conversation: the n-th request (from 0)
// is checked against reqs[n] (the last one past the end) and answered by
// handle with its turn n.
func newTurnServer(t *testing.T, p Provider, reqs []*model.Request, handle func(w http.ResponseWriter, turn int, body []byte)) *server {
	t.Helper()
	s := &server{release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		turn := int(s.requests.Add(1)) - 1
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read request body: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != p.Wire.Path {
			t.Errorf("request %s %s, want POST %s", r.Method, r.URL.Path, p.Wire.Path)
		}
		req := reqs[min(turn, len(reqs)-1)]
		if err := p.Wire.CheckRequest(r, body, req, APIKey); err != nil {
			t.Errorf("request %d does not carry the call: %v\nbody: %s", turn, err, body)
		}
		handle(w, turn, body)
	}))
	// Cleanups run last-in first-out: release hanging handlers, then close.
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.release) })
	return s
}

func (s *server) model(p Provider) model.Model { return p.New(s.URL, APIKey) }

func reply() Reply {
	return Reply{Model: ServedModel, Text: "Bonjour.", In: 31, Out: 4}
}

func generate(t *testing.T, m model.Model, req *model.Request) (*model.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := m.Generate(ctx, req)
	noKey(t, err)
	return resp, err
}

// noKey fails the test when err's text holds the API key.
func noKey(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, text := range []string{err.Error(), fmtAll(err)} {
		if strings.Contains(text, APIKey) {
			t.Errorf("error text holds the API key: %s", text)
		}
	}
}

// fmtAll is the text of every error in err's chain.
func fmtAll(err error) string {
	var b strings.Builder
	for e := err; e != nil; e = errors.Unwrap(e) {
		b.WriteString(e.Error())
		b.WriteByte('\n')
	}
	return b.String()
}

func wantClass(t *testing.T, err error, want fault.Class) {
	t.Helper()
	if err == nil {
		t.Fatalf("Generate succeeded, want a %s error", want)
	}
	if got := fault.ClassOf(err); got != want {
		t.Fatalf("class %q, want %q; error: %v", got, want, err)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
