package rein_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/trace"
)

const secretKey = "sk-test-0123456789abcdef"

// chatServer speaks OpenAI's Chat Completions wire format and answers every
// request with reply; it counts calls and checks the bearer key.
func chatServer(t *testing.T, reply string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+secretKey {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		var body struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		content, _ := json.Marshal(reply)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"`+body.Model+`","choices":[{"index":0,"message":{"role":"assistant","content":`+string(content)+`},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func writeProject(t *testing.T, baseURL string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"flow.yaml": `name: scored
steps:
  - id: score
    model: default
    prompt_template: "Score {input.name}"
    output_schema: {type: object, properties: {score: {type: number}}, required: [score]}
`,
		"rein.yaml": "models:\n  default: {provider: openai, model: gpt-4o-mini, base_url: \"" + baseURL + "/v1\", api_key_env: REIN_TEST_KEY}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func env(key string) func(string) string {
	return func(name string) string {
		if name == "REIN_TEST_KEY" {
			return key
		}
		return ""
	}
}

func TestConfiguredProviderAnswersAStep(t *testing.T) {
	t.Parallel()
	srv, calls := chatServer(t, `{"score": 80}`)
	dir := writeProject(t, srv.URL)
	p, err := project.Load(dir, &project.LoadOptions{Getenv: env(secretKey)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(nil).Run(context.Background(), p, map[string]any{"name": "Zhang"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunSucceeded || res.Outputs["score"].(map[string]any)["score"] != 80.0 || calls.Load() != 1 {
		t.Fatalf("status %s, outputs %v, %d calls, error %v", res.Status, res.Outputs, calls.Load(), res.Error)
	}
	if res.Usage.TokensIn != 12 || res.Usage.TokensOut != 5 {
		t.Fatalf("usage %+v", res.Usage)
	}
}

func TestMissingOrWrongKeySaysWhichVariableAndNeverTheKey(t *testing.T) {
	t.Parallel()
	srv, _ := chatServer(t, `{"score": 80}`)
	dir := writeProject(t, srv.URL)
	for name, key := range map[string]string{"missing": "", "wrong": "sk-wrong-key-4242424242"} {
		t.Run(name, func(t *testing.T) {
			var events strings.Builder
			p, err := project.Load(dir, &project.LoadOptions{Getenv: env(key)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := clientOf(nil).Run(context.Background(), p, map[string]any{"name": "Zhang"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != trace.RunFailed || res.Error.Class != fault.Business || !strings.Contains(res.Error.Message, "REIN_TEST_KEY") {
				t.Fatalf("status %s, error %+v: want a business error naming REIN_TEST_KEY", res.Status, res.Error)
			}
			b, _ := json.Marshal(res)
			events.Write(b)
			if key != "" && strings.Contains(events.String(), key) {
				t.Fatalf("the key leaked into the result: %s", events.String())
			}
		})
	}
}

func TestRecordThenReplayRunsOffline(t *testing.T) {
	t.Parallel()
	srv, calls := chatServer(t, `{"score": 64}`)
	dir := writeProject(t, srv.URL)
	tape := filepath.Join(t.TempDir(), "run.cassette.json")
	p, err := project.Load(dir, &project.LoadOptions{Getenv: env(secretKey), Record: tape})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := clientOf(nil).Run(context.Background(), p, map[string]any{"name": "Zhang"}); err != nil || res.Status != trace.RunSucceeded {
		t.Fatalf("record run: %v %+v", err, res.Error)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(tape); strings.Contains(string(b), secretKey) {
		t.Fatal("the cassette holds the API key")
	}
	srv.Close() // from here on nothing may reach the network
	p, err = project.Load(dir, &project.LoadOptions{Replay: tape})
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(nil).Run(context.Background(), p, map[string]any{"name": "Zhang"})
	if err != nil || res.Status != trace.RunSucceeded || res.Outputs["score"].(map[string]any)["score"] != 64.0 {
		t.Fatalf("replay: %v %v %+v", err, res.Outputs, res.Error)
	}
	if calls.Load() != 1 {
		t.Fatalf("%d server calls, want the one recorded", calls.Load())
	}
	// a request the cassette does not hold fails, it is never guessed.
	res, err = clientOf(nil).Run(context.Background(), p, map[string]any{"name": "Someone else"})
	if err != nil || res.Status != trace.RunFailed || !strings.Contains(res.Error.Message, "record the cassette again") {
		t.Fatalf("unknown request: %v %+v", err, res.Error)
	}
}

func TestModelFlagAnswersEveryName(t *testing.T) {
	t.Parallel()
	srv, calls := chatServer(t, `{"score": 90}`)
	dir := writeProject(t, srv.URL)
	// --model names the configured entry; a script beside the flow is not used.
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte("replies:\n  - {step: score, output: {score: 1}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := project.Load(dir, &project.LoadOptions{Getenv: env(secretKey), Model: "default"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(nil).Run(context.Background(), p, map[string]any{"name": "Zhang"})
	if err != nil || res.Outputs["score"].(map[string]any)["score"] != 90.0 || calls.Load() != 1 {
		t.Fatalf("%v %v %d calls", err, res.Outputs, calls.Load())
	}
	// without --model, the script beside the flow answers names rein.yaml does not configure
	// and rein.yaml answers its own.
	p, err = project.Load(dir, &project.LoadOptions{Getenv: env(secretKey)})
	if err != nil {
		t.Fatal(err)
	}
	if res, err = clientOf(nil).Run(context.Background(), p, map[string]any{"name": "Zhang"}); err != nil || res.Outputs["score"].(map[string]any)["score"] != 90.0 {
		t.Fatalf("%v %v", err, res.Outputs)
	}
	if _, err := project.Load(dir, &project.LoadOptions{Model: "nope/x"}); err == nil || !strings.Contains(err.Error(), "unknown provider") {
		t.Fatalf("bad --model: %v", err)
	}
}

func TestDefaultModelAnswersStepsWithoutModel(t *testing.T) {
	t.Parallel()
	srv, calls := chatServer(t, `{"score": 70}`)
	dir := writeProject(t, srv.URL)
	flow := "name: d\nsteps:\n  - {id: score, prompt_template: \"Score {input.name}\", output_schema: {type: object, required: [score]}}\n"
	if err := os.WriteFile(filepath.Join(dir, "flow.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := project.Load(dir, &project.LoadOptions{Getenv: env(secretKey)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(nil).Run(context.Background(), p, map[string]any{"name": "Zhang"})
	if err != nil || res.Status != trace.RunSucceeded || calls.Load() != 1 {
		t.Fatalf("%v %s %+v, %d calls", err, res.Status, res.Error, calls.Load())
	}
}

func TestUnknownProviderIsALoadError(t *testing.T) {
	t.Parallel()
	dir := writeProject(t, "http://127.0.0.1:1")
	if err := os.WriteFile(filepath.Join(dir, "rein.yaml"), []byte("models:\n  default: {provider: opena1, model: gpt-4o-mini}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := project.Load(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "rein.yaml:2:3: model default: unknown provider \"opena1\"") {
		t.Fatalf("err %v", err)
	}
}
