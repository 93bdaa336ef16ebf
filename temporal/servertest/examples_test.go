//go:build temporalserver

package servertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestExamplesWorker runs the commands as a user types them: a
// worker process (rein worker --temporal … examples/, over a SQLite run
// store) serving every example folder, and commands against it:
//
//   - the scripted resume-screen flow, twice on the same worker: each run
//     is answered from the whole script (the replies are used up per run);
//   - the process workflow, whose idempotency: is
//     session_workflow_input_hash: without --session the start is refused
//     (exit 2), with one it starts, and a second start with the same
//     session and input returns that run, saying so;
//   - the process clerk, an agent whose tool is the process workflow: the
//     worker serves the workflow tool over its run store.
func TestExamplesWorker(t *testing.T) {
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	run := workerProcess(t, nil, examples)

	for i := range 2 {
		if code, out, errs := run("run", filepath.Join(examples, "resume-screen")); code != 0 || !strings.Contains(out, " succeeded\n") {
			t.Fatalf("rein run examples/resume-screen, run %d on one worker: exit %d\n%s\n%s", i+1, code, out, errs)
		}
	}
	// --output json is a local rein run's object: steps by id.
	code, out, errs := run("run", filepath.Join(examples, "resume-screen"), "--output", "json")
	var res struct {
		RunID   string                     `json:"run_id"`
		Status  string                     `json:"status"`
		Outputs map[string]json.RawMessage `json:"outputs"`
		Steps   map[string]struct {
			Status   string `json:"status"`
			Attempts int    `json:"attempts"`
		} `json:"steps"`
		Error   *struct{} `json:"error"`
		Pending []struct {
			StepID string `json:"step_id"`
			Kind   string `json:"kind"`
		} `json:"pending"`
		Existing bool `json:"existing"`
		Usage    struct {
			LLMCalls int `json:"llm_calls"`
			TokensIn int `json:"tokens_in"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Status != "succeeded" || res.Steps["extract_info"].Status != "succeeded" ||
		res.Steps["extract_info"].Attempts != 1 || res.Outputs["score_candidate"] == nil || res.Error != nil || res.Pending == nil ||
		res.Usage.LLMCalls < 2 || res.Usage.TokensIn == 0 {
		t.Fatalf("rein run --output json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}

	process := filepath.Join(examples, "process-workflow")
	if code, _, errs := run("run", process); code != 2 || !strings.Contains(errs, "pass a session id with --session ID") {
		t.Errorf("rein run examples/process-workflow without --session: exit %d, want 2 naming --session\n%s", code, errs)
	}
	code, first, errs := run("run", process, "--session", "s1")
	if code != 3 || !strings.Contains(first, "waits: step parse (submission)") || strings.Contains(errs, "started earlier") {
		t.Fatalf("rein run examples/process-workflow --session s1: exit %d\n%s\n%s", code, first, errs)
	}
	code, again, errs := run("run", process, "--session", "s1")
	if code != 3 || again != first || !strings.Contains(errs, "was started earlier with the same idempotency key (session_workflow_input_hash)") {
		t.Errorf("the same start again: exit %d\n%s\n%s\nwant the first run's state:\n%s", code, again, errs, first)
	}
	code, out, errs = run("run", process, "--session", "s1", "-o", "json")
	res.Pending = nil
	if err := json.Unmarshal([]byte(out), &res); code != 3 || err != nil || !res.Existing || res.Status != "waiting" ||
		len(res.Pending) != 1 || res.Pending[0].StepID != "parse" || res.Pending[0].Kind != "submission" {
		t.Errorf("the same start, -o json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	// rein runs show --output json holds a local show's run, steps and
	// approvals; rein runs list --output json a local list's id.
	code, out, errs = run("runs", "show", res.RunID, "--output", "json")
	var shown struct {
		Run struct {
			ID, Status string
		} `json:"run"`
		Steps []struct {
			StepID string `json:"step_id"`
			Status string `json:"status"`
		} `json:"steps"`
		Approvals []struct {
			StepID string `json:"step_id"`
			Kind   string `json:"kind"`
		} `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || shown.Run.ID != res.RunID || shown.Run.Status != "waiting" ||
		len(shown.Steps) == 0 || shown.Steps[0].StepID != "parse" || shown.Steps[0].Status != "waiting" || len(shown.Approvals) != 1 || shown.Approvals[0].Kind != "submission" {
		t.Errorf("rein runs show --output json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if code, other, errs := run("run", process, "--session", "s2"); code != 3 || other == first {
		t.Errorf("a start in another session: exit %d\n%s\n%s\nwant a run other than\n%s", code, other, errs, first)
	}

	code, out, errs = run("agent", filepath.Join(examples, "process-clerk"), "file a welded steel frame")
	if code != 0 || !strings.Contains(out, "Workflow results (process_workflow):") || !strings.Contains(out, "(workflow process): waiting; waits on parse (submit)") {
		t.Errorf("rein agent examples/process-clerk: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = run("agent", filepath.Join(examples, "process-clerk"), "file a welded steel frame", "--output", "json")
	var ans struct {
		Status string `json:"status"`
		Answer string `json:"answer"`
		Calls  []struct {
			Turn   int    `json:"turn"`
			Tool   string `json:"tool"`
			Status string `json:"status"`
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(out), &ans); code != 0 || err != nil || ans.Status != "answered" || !strings.Contains(ans.Answer, "Workflow results") ||
		len(ans.Calls) != 1 || ans.Calls[0].Tool != "process_workflow" || ans.Calls[0].Turn != 1 {
		t.Errorf("rein agent --output json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
}

// workerProcess builds rein-temporal, starts a real server and a worker
// process on it (rein-temporal worker DIR…, over a SQLite run store, env
// added to its environment), stopped with an interrupt when the test
// ends; it returns a function that runs a command against that server and
// returns its exit code, stdout and stderr.
func workerProcess(t *testing.T, env []string, dirs ...string) func(args ...string) (int, string, string) {
	t.Helper()
	ts := server(t)
	prog := program(t)
	conn := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "examples"}
	startWorker(t, prog, conn, env, dirs...)
	return commander(t, prog, conn, env)
}

// startWorker starts prog worker over dirs with conn (the server's flags)
// and a SQLite run store of its own, env added to its environment; the
// test's cleanup stops it (SIGINT, then SIGKILL after 30 s) and, when the
// test failed, logs its stderr.
func startWorker(t *testing.T, prog string, conn, env []string, dirs ...string) {
	t.Helper()
	var werr bytes.Buffer
	w := exec.Command(prog, append(append([]string{"worker", "--store", filepath.Join(t.TempDir(), "rein.db")}, dirs...), conn...)...)
	w.Env = append(os.Environ(), env...)
	w.Stderr = &werr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = w.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = w.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("the worker's stderr:\n%s", werr.String())
		}
	})
}

// TestNoWorker: a run started on a task queue no worker polls is not
// waited on in silence: rein run says so on stderr, naming the queue and
// the command that starts a worker, keeps waiting, and ends as usual once
// a worker comes.
func TestNoWorker(t *testing.T) {
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	ts := server(t)
	prog := program(t)
	conn := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", "lonely"}
	cmd := exec.Command(prog, append([]string{"run", filepath.Join(examples, "resume-screen")}, conn...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	errs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stderr strings.Builder
	told := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(errs)
		said := false
		for sc.Scan() {
			mu.Lock()
			stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !said && strings.Contains(sc.Text(), `no worker polls task queue "lonely"`) && strings.Contains(sc.Text(), "rein worker --temporal") {
				said = true
				close(told)
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { <-drained; waited <- cmd.Wait() }()
	select {
	case <-told:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Log("rein run, killed:", <-waited)
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("rein run on a queue no worker polls said nothing of it in a minute:\n%s", stderr.String())
	}
	startWorker(t, prog, conn, nil, examples)
	select {
	case err := <-waited:
		mu.Lock()
		defer mu.Unlock()
		if err != nil || !strings.Contains(out.String(), " succeeded\n") {
			t.Fatalf("once a worker came: %v\n%s\n%s", err, out.String(), stderr.String())
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Log("rein run, killed:", <-waited)
		t.Fatal("the run did not end in 2 minutes once a worker came")
	}
}

// TestProviderAgent: an agent whose model is an OpenAI-compatible server
// (here an httptest server speaking Chat Completions, sending a native
// tool call) runs on a worker process as it runs locally: the worker
// builds the provider's model from rein.yaml (its key from the worker's
// environment), the tool call is made, and its result goes back to the
// model in the tool message of the call's id.
func TestProviderAgent(t *testing.T) {
	var mu sync.Mutex
	var seen []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer mock-key" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, body)
		mu.Unlock()
		msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "add", "arguments": `{"a":2,"b":3}`}}}}
		finish := "tool_calls"
		msgs, _ := body["messages"].([]any)
		for _, m := range msgs {
			if m, _ := m.(map[string]any); m["role"] == "tool" {
				msg, finish = map[string]any{"role": "assistant", "content": fmt.Sprintf("The sum is %v.", m["content"])}, "stop"
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "mock-1",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer srv.Close()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"agent.yaml": "name: adder\nmodel: mock\ninstructions: Add with the add tool.\ntools:\n  add: {}\n",
		"rein.yaml": "models:\n  mock: {provider: openai, model: mock-1, base_url: \"" + srv.URL + "/v1\", api_key_env: MOCK_KEY}\n" +
			"tools:\n  add:\n    description: Adds a and b.\n    command: [\"sh\", \"-c\", \"cat >/dev/null; echo 5\"]\n    effect: read\n" +
			"    input_schema: {type: object, properties: {a: {type: number}, b: {type: number}}}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := workerProcess(t, []string{"MOCK_KEY=mock-key"}, dir)
	code, out, errs := run("agent", dir, "add 2 and 3")
	// the call as it settled, then the answer, as a local rein agent
	// prints them.
	if code != 0 || !strings.HasPrefix(out, "  -> add {\"a\":2,\"b\":3} -> ok: 5\nThe sum is 5.\n") {
		t.Fatalf("rein agent --temporal: exit %d\n%s\n%s", code, out, errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("the model was asked %d times, want 2", len(seen))
	}
	tools, _ := seen[0]["tools"].([]any)
	var names []string
	for _, tl := range tools {
		tl, _ := tl.(map[string]any)
		fn, _ := tl["function"].(map[string]any)
		names = append(names, fmt.Sprint(fn["name"]))
	}
	if !slices.Contains(names, "add") {
		t.Errorf("the first request offers the functions %v, not add", names)
	}
	if msgs := fmt.Sprint(seen[1]["messages"]); !strings.Contains(msgs, "tool_call_id:call_1") || !strings.Contains(msgs, "content:5") {
		t.Errorf("the second request does not carry the call's result: %s", msgs)
	}
}
