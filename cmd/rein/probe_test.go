package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The attack probe: the built rein binary runs each path that can make a
// side effect, many times, and is killed with SIGKILL at random moments
// (seeded; the seed is printed, REIN_PROBE_SEED replays the choices, not
// the machine's timing). A person
// then carries each run on as the docs say: resume what was running,
// approve what asks for approval, and decide what is unknown by looking
// at the outside system (the tool's ledger): settle it when its effect is
// there, approve it (make it again) when it is not. Every tool with an
// effect appends "<tool> <idempotency key> <args>" to its ledger file, so
// the probe counts, per path:
//
//   - duplicates: executions of one effect (tool and args' ref, in one
//     run or, for rein mcp, one trial) beyond the first — with the person
//     above, any is a repeat nobody asked for;
//   - lost: an effect the flow makes, missing from the ledger of a run
//     that ended as it should without a person settling anything.
//
// The short variant (2 trials a path, the first unkilled: it measures how
// long the path takes, which the kills are spread over, and must end as
// the path should) runs in every go test (not -short); REIN_PROBE=1
// runs trials round-robin for REIN_PROBE_MINUTES (12 by default);
// REIN_PROBE_PATHS=TEXT runs only the paths whose name holds TEXT. The
// table it logs is the one in docs/durability.md. REIN_PROBE_CARELESS=1
// checks the probe itself: its person approves every unknown call without
// looking, and the probe must then count the repeats that makes.

// probeConfig is rein.yaml: the tools, and model m at the fake provider.
const probeConfig = `tools:
  pay:
    command: ["sh", "-c", %[1]q, %[2]q, "pay"]
    effect: external
    input_schema: {type: object, properties: {ref: {type: string}}, required: [ref]}
  book:
    command: ["sh", "-c", %[1]q, %[2]q, "book"]
    effect: write
    reversibility: compensatable
    compensate: {tool: refund, args: {ref: "{args.ref}"}}
    input_schema: {type: object, properties: {ref: {type: string}}, required: [ref]}
  refund:
    command: ["sh", "-c", %[1]q, %[2]q, "refund"]
    effect: external
    input_schema: {type: object, properties: {ref: {type: string}}, required: [ref]}
  send:
    command: ["sh", "-c", %[1]q, %[2]q, "send"]
    effect: external
    input_schema: {type: object, properties: {ref: {type: string}}, required: [ref]}
  fail:
    command: ["sh", "-c", "cat > /dev/null; echo 'the check failed' >&2; exit 1"]
    effect: none
  flop:
    command: ["sh", "-c", "cat > /dev/null; echo 'the primary is down' >&2; exit 1"]
    effect: none
    idempotent: true
  look:
    command: ["sh", "-c", "cat > /dev/null; echo '{\"ok\": true}'"]
    effect: none
    idempotent: true
adapters:
  fetch:
    command: ["sh", "-c", %[4]q, %[2]q, "fetch"]
    effect: write
models:
  m: {provider: ollama, model: tiny, base_url: %[3]q}
`

// probeTool is every effect tool's script: it reads its args (none: its
// process outlived rein's and has no call to make), fails for send while
// the file <ledger>.up is missing, else appends to the ledger and answers.
const probeTool = `in=$(cat); [ -n "$in" ] || exit 3
if [ "$1" = send ] && [ ! -e "$0.up" ]; then echo 'the mail server is down' >&2; exit 1; fi
printf '%s %s %s\n' "$1" "$REIN_IDEMPOTENCY_KEY" "$in" >> "$0"
sleep 0.05
echo '{"ok": true}'`

// probeAdapter is the source adapter's script: it appends its call to the
// ledger (its effect, ref s) and answers.
const probeAdapter = `cat > /dev/null
printf '%s %s {"ref":"s"}\n' "$1" "$REIN_IDEMPOTENCY_KEY" >> "$0"
sleep 0.05
echo '{"ok": true}'`

// probePath is one path: its flow, the effects a run of it makes (tool/ref)
// when it ends as it should, and how that ends.
type probePath struct {
	name, flow string
	effects    []string
	end        string // the run's status when it ends as it should
	retry      bool   // the run fails first; the person fixes send and retries (rein runs retry)
	mcp        bool   // served by rein mcp (flow unused)
	// remedy: once the run ended, rein runs remediate --premise remedy
	// takes its effects back (killed at random, carried on by the person).
	remedy string
	// adapter: a workflow task's source step, its adapter run by
	// submit_from_source over rein mcp.
	adapter bool
}

var probePaths = []probePath{
	{name: "flow step", flow: "name: p\nsteps:\n  - {id: pay, tool: pay, args: {ref: a}}\n  - {id: pay2, tool: pay, args: {ref: b}}\n",
		effects: []string{"pay/a", "pay/b"}, end: "succeeded"},
	{name: "for_each item", flow: "name: p\nsteps:\n  - {id: each, tool: pay, for_each: '[\"a\", \"b\", \"c\"]', concurrency: 1, args: {ref: \"{item}\"}}\n",
		effects: []string{"pay/a", "pay/b", "pay/c"}, end: "succeeded"},
	{name: "approved agent call", flow: "name: p\nsteps:\n  - id: agent\n    type: agent\n    model: m\n    prompt_template: refund a\n    tools: {pay: {approval: required}}\n",
		effects: []string{"pay/a"}, end: "succeeded"},
	{name: "saga compensation", flow: "name: p\non_failure: compensate\nsteps:\n  - {id: book, tool: book, args: {ref: a}}\n  - {id: book2, tool: book, args: {ref: b}}\n  - {id: check, tool: fail, args: {}, retries: 0}\n",
		effects: []string{"book/a", "book/b", "refund/a", "refund/b"}, end: "failed"},
	{name: "retry (rein runs retry)", flow: "name: p\nsteps:\n  - {id: pay, tool: pay, args: {ref: a}}\n  - {id: send, tool: send, args: {ref: b}, retries: 0}\n  - {id: last, tool: pay, args: {ref: c}}\n",
		effects: []string{"pay/a", "send/b", "pay/c"}, end: "succeeded", retry: true},
	{name: "MCP-served call (rein mcp)", effects: []string{"pay/a"}, mcp: true},
	{name: "plan step", flow: "name: p\nsteps:\n  - {id: pl, type: plan, model: m, goal: pay a then b, tools: [pay]}\n",
		effects: []string{"pay/a", "pay/b"}, end: "succeeded"},
	{name: "repeat round", flow: "name: p\nsteps:\n  - {id: r, tool: pay, repeat: {until: \"iteration >= 2\", max: 5}, args: {ref: \"r{iteration}\"}}\n",
		effects: []string{"pay/r0", "pay/r1", "pay/r2"}, end: "succeeded"},
	{name: "fallback", flow: "name: p\nsteps:\n  - {id: s, tool: flop, args: {ref: x}, retries: 0, on_error: fallback, fallback: {tool: pay, args: {ref: f}}}\n  - {id: t, tool: pay, args: {ref: b}}\n",
		effects: []string{"pay/f", "pay/b"}, end: "succeeded"},
	{name: "remediation (rein runs remediate)", flow: "name: p\nsteps:\n  - {id: src, tool: look, args: {}}\n  - {id: book, tool: book, args: {ref: a, from: \"{src.ok}\"}}\n  - {id: book2, tool: book, args: {ref: b, from: \"{src.ok}\"}, requires: [book]}\n",
		effects: []string{"book/a", "book/b", "refund/a", "refund/b"}, end: "succeeded", remedy: "src"},
	{name: "source adapter (submit_from_source)", flow: "name: src\ninputs: {type: object}\nsteps:\n  - {id: s, adapter: fetch, skill: fetch-it, requires: []}\n",
		effects: []string{"fetch/s"}, end: "succeeded", adapter: true},
}

// probeTally is what the probe counted on one path.
type probeTally struct{ runs, kills, decisions, duplicates, lost int }

func TestLedgerProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the rein binary many times")
	}
	bin, err := reinBinary()
	if err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("REIN_PROBE_SEED"); s != "" {
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("REIN_PROBE_SEED=%q: %v", s, err)
		}
	}
	t.Logf("probe seed %d (REIN_PROBE_SEED=%d replays its choices)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	srv := httptest.NewServer(http.HandlerFunc(probeModel))
	defer srv.Close()

	budget, perPath := time.Duration(0), 2
	if os.Getenv("REIN_PROBE") == "1" {
		minutes := 12
		if m, err := strconv.Atoi(os.Getenv("REIN_PROBE_MINUTES")); err == nil && m > 0 {
			minutes = m
		}
		budget, perPath = time.Duration(minutes)*time.Minute, 1<<30
	}
	start := time.Now()
	tally := make([]probeTally, len(probePaths))
	spans := make([]time.Duration, len(probePaths))
	for n := 0; n < perPath && (budget == 0 || time.Since(start) < budget); n++ {
		for i := range probePaths {
			p := &probePaths[i]
			if only := os.Getenv("REIN_PROBE_PATHS"); only != "" && !strings.Contains(p.name, only) {
				continue
			}
			pr := &prober{t: t, bin: bin, rng: rng, dir: t.TempDir(), p: p, tally: &tally[i], span: spans[i]}
			pr.setup(srv.URL + "/v1")
			if n == 0 {
				pr.span = 0 // the first trial of a path is not killed: it measures span
			}
			switch {
			case p.mcp:
				pr.mcpTrial()
			case p.adapter:
				pr.adapterTrial()
			default:
				pr.trial()
			}
			pr.count()
			switch {
			case n == 0:
				spans[i] = max(pr.took, 50*time.Millisecond)
			case pr.whole && !p.retry:
				// a path that ran faster than its first trial (measured
				// under another load) has its kills spread over that.
				spans[i] = min(spans[i], max(pr.took, 50*time.Millisecond))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "probe seed %d, %s\n| path | runs | kills (SIGKILL) | decisions by a person (approvals, settles) | duplicated effects | lost effects |\n|---|---|---|---|---|---|\n", seed, time.Since(start).Round(time.Second))
	var sum probeTally
	for i, tl := range tally {
		if tl.runs == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d |\n", probePaths[i].name, tl.runs, tl.kills, tl.decisions, tl.duplicates, tl.lost)
		t.Logf("%s: kills spread over %s", probePaths[i].name, spans[i])
		sum.runs, sum.kills, sum.decisions, sum.duplicates, sum.lost = sum.runs+tl.runs, sum.kills+tl.kills, sum.decisions+tl.decisions, sum.duplicates+tl.duplicates, sum.lost+tl.lost
	}
	fmt.Fprintf(&b, "| all | %d | %d | %d | %d | %d |\n", sum.runs, sum.kills, sum.decisions, sum.duplicates, sum.lost)
	t.Log("\n" + b.String())
	if sum.duplicates > 0 || sum.lost > 0 {
		t.Errorf("%d duplicated and %d lost effects (seed %d)", sum.duplicates, sum.lost, seed)
	}
}

// probePlan is what the fake provider's planner proposes: pay a, then b.
const probePlan = `{"goal": "pay a then b", "steps": [{"id": "a", "tool": "pay", "args": {"ref": "a"}}, {"id": "b", "tool": "pay", "depends_on": ["a"], "args": {"ref": "b"}}]}`

// probeModel is the fake provider (OpenAI chat completions): a request
// without tools is a plan step's planner, answered with probePlan; an
// agent's asks for pay {ref: a} until the conversation holds a tool
// result, then answers.
func probeModel(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []map[string]any `json:"messages"`
		Tools    []any            `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	w.Header().Set("Content-Type", "application/json")
	if len(req.Tools) == 0 {
		content, _ := json.Marshal(probePlan)
		fmt.Fprintf(w, `{"id":"p1","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}`, content)
		return
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1]["role"] == "tool" {
		fmt.Fprint(w, `{"id":"c2","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"refunded a"}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
		return
	}
	fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"tiny","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"pay","arguments":"{\"ref\":\"a\"}"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
}

// prober runs one trial of a path in its own folder and store.
type prober struct {
	t       *testing.T
	bin     string
	rng     *rand.Rand
	dir     string
	p       *probePath
	tally   *probeTally
	settled bool // a person settled something: what is missing is theirs
	// remedied: the remediation of a remedy path finished (not killed, not
	// waiting): only then are its compensations counted as lost if missing.
	remedied bool
	task     string // an adapter trial's task (its run)
	// span is how long the path's first rein invocation took unkilled.
	span time.Duration
	took time.Duration // the first invocation's
	// whole: the first invocation ran to its end, unkilled (its took is a
	// span that kills can still hit).
	whole, first bool
}

func (pr *prober) db() string     { return filepath.Join(pr.dir, "rein.db") }
func (pr *prober) ledger() string { return filepath.Join(pr.dir, "ledger") }

func (pr *prober) setup(model string) {
	files := map[string]string{
		"rein.yaml": fmt.Sprintf(probeConfig, probeTool, pr.ledger(), model, probeAdapter),
		"flow.yaml": pr.p.flow,
	}
	if pr.p.mcp {
		files["flow.yaml"] = "name: p\nsteps:\n  - {id: pay, tool: pay, args: {ref: a}}\n"
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(pr.dir, name), []byte(text), 0o644); err != nil {
			pr.t.Fatal(err)
		}
	}
}

// rein runs the binary with args and --db, killing it with SIGKILL after
// a random delay when kill is set (and the coin says so); it returns its
// stdout and whether it was killed.
func (pr *prober) rein(kill float64, args ...string) (string, bool) {
	cmd := exec.Command(pr.bin, append(args, "--db", pr.db())...)
	cmd.Dir = pr.dir
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if os.Getenv("REIN_PROBE_VERBOSE") != "" {
		defer func() { pr.t.Logf("rein %s: %s", strings.Join(args, " "), cut(stderr.String(), 600)) }()
	}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		pr.t.Fatal(err)
	}
	defer func() {
		if pr.took == 0 {
			pr.took = time.Since(begin)
		}
	}()
	if pr.span > 0 && pr.rng.Float64() < kill {
		// a moment of the run: after most of rein's start, within what an
		// unkilled run of the path took (span)
		delay := pr.span/5 + time.Duration(pr.rng.Int64N(int64(pr.span)))
		timer := time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	killed := false
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
		killed = true
		pr.tally.kills++
	}
	if !pr.first {
		pr.first, pr.whole = true, !killed
	}
	return out.String(), killed
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// probeRun is what rein runs show -o json prints of a run.
type probeRun struct {
	Run struct {
		Status string `json:"status"`
	} `json:"run"`
	Approvals []struct {
		StepID  string `json:"step_id"`
		Kind    string `json:"kind"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"approvals"`
}

// runID is the trial's run ("" when the kill came before it was created).
func (pr *prober) runID() string {
	out, _ := pr.rein(0, "runs", "list", "-o", "json")
	var runs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) == 0 {
		if os.Getenv("REIN_PROBE_VERBOSE") != "" {
			pr.t.Logf("runs list: %v %q", err, out)
		}
		return ""
	}
	return runs[0].ID
}

// trial: the run, killed at random; then a person carries it on until it
// ends (at most 16 rounds, each resume killed at random too).
func (pr *prober) trial() {
	pr.tally.runs++
	kill := 0.8
	if pr.p.retry {
		kill = 0 // the run fails; the retry below is what is killed
	}
	_, _ = pr.rein(kill, "run", pr.dir, "-o", "json")
	id := pr.runID()
	if id == "" {
		return // killed before the run was created: nothing ran
	}
	if pr.p.retry {
		if err := os.WriteFile(pr.ledger()+".up", nil, 0o644); err != nil {
			pr.t.Fatal(err)
		}
		if r := pr.show(id); r.Run.Status == "failed" {
			_, _ = pr.rein(0.8, "runs", "retry", id, "-o", "json")
		}
	}
	for range 16 {
		r := pr.show(id)
		switch r.Run.Status {
		case "running", "pending":
			_, _ = pr.rein(0.25, "runs", "resume", id, "-o", "json")
		case "waiting":
			for _, p := range r.Approvals {
				if p.Status == "pending" {
					pr.decide(id, p.StepID, p.Kind, p.Message)
				}
			}
			_, _ = pr.rein(0.25, "runs", "resume", id, "-o", "json")
		case "failed":
			if !pr.p.retry {
				return
			}
			// the retry was killed before it reopened the run: again
			_, _ = pr.rein(0.8, "runs", "retry", id, "-o", "json")
		default:
			if pr.p.remedy != "" {
				pr.remediate(id)
			}
			return
		}
	}
	pr.t.Errorf("%s: run %s did not end after 16 rounds (%s)", pr.p.name, id, pr.show(id).Run.Status)
}

// remediate takes a run's effects back with rein runs remediate, killed at
// random; the person runs it again until it finishes (docs/durability.md:
// a resume does not carry a remediation on), and decides what it
// escalates (a compensation in doubt: settled when the ledger holds it,
// approved to be made once more when not), then resumes the waiting run.
func (pr *prober) remediate(id string) {
	for range 16 {
		_, killed := pr.rein(0.8, "runs", "remediate", id, "--premise", pr.p.remedy, "-o", "json")
		r := pr.show(id)
		switch {
		case r.Run.Status == "waiting":
			for _, p := range r.Approvals {
				if p.Status == "pending" {
					pr.decide(id, p.StepID, p.Kind, p.Message)
				}
			}
			_, _ = pr.rein(0.25, "runs", "resume", id, "-o", "json")
		case !killed:
			pr.remedied = true
			return
		}
	}
	pr.t.Errorf("%s: the remediation of run %s did not finish after 16 rounds", pr.p.name, id)
}

// adapterTrial: a workflow task of a source step whose adapter (fetch, not
// idempotent) runs on submit_from_source, served by rein mcp, which is
// killed at random while the adapter may run. The host's agent then calls
// submit_from_source again against a new process; a call it answers as
// unknown is the person's: they look at the ledger and settle the step
// (with the adapter's answer when it is there, by hand when not).
func (pr *prober) adapterTrial() {
	pr.tally.runs++
	serve := func() (*sdk.ClientSession, *exec.Cmd, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.Command(pr.bin, "mcp", "--db", pr.db(), pr.dir)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "probe"}, answering("accept", nil)).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			pr.t.Fatal(err)
		}
		return cs, cmd, cancel
	}
	stop := func(cs *sdk.ClientSession, cmd *exec.Cmd, cancel context.CancelFunc) {
		cs.Close()
		_ = cmd.Wait()
		cancel()
	}
	cs, cmd, cancel := serve()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "src_workflow", Arguments: map[string]any{"action": "start", "input": map[string]any{}}})
	var task struct {
		TaskID string `json:"task_id"`
	}
	if err == nil && !res.IsError && len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			_ = json.Unmarshal([]byte(tc.Text), &task)
		}
	}
	if task.TaskID == "" {
		stop(cs, cmd, cancel)
		pr.t.Fatalf("%s: start: %v %+v", pr.p.name, err, res)
	}
	pr.task = task.TaskID
	submit := map[string]any{"action": "submit_from_source", "task_id": task.TaskID, "step_id": "s"}
	done := make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(done)
		_, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "src_workflow", Arguments: submit})
	}()
	if pr.span > 0 && pr.rng.Float64() < 0.8 {
		time.Sleep(time.Duration(pr.rng.Int64N(int64(pr.span))))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		pr.tally.kills++
	}
	<-done
	if pr.took == 0 {
		pr.took = time.Since(begin)
	}
	stop(cs, cmd, cancel)
	time.Sleep(200 * time.Millisecond) // a tool the kill orphaned finishes its write
	for range 8 {
		r := pr.show(task.TaskID)
		switch r.Run.Status {
		case "succeeded", "failed", "cancelled":
			return
		case "running", "pending":
			_, _ = pr.rein(0, "runs", "resume", task.TaskID, "-o", "json")
			continue
		}
		cs, cmd, cancel = serve()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "src_workflow", Arguments: submit})
		stop(cs, cmd, cancel)
		text := ""
		if err == nil && len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*sdk.TextContent); ok {
				text = tc.Text
			}
		}
		if err == nil && res.IsError && strings.Contains(text, "outcome is unknown") {
			pr.tally.decisions++
			pr.settled = true
			_, _ = pr.rein(0, "runs", "settle", task.TaskID, "s", "--value", `{"ok": true}`, "--by", "probe")
		}
	}
	pr.t.Errorf("%s: task %s did not end after 8 rounds (%s)", pr.p.name, task.TaskID, pr.show(task.TaskID).Run.Status)
}

func (pr *prober) show(id string) probeRun {
	out, _ := pr.rein(0, "runs", "show", id, "-o", "json")
	var r probeRun
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&r); err != nil {
		pr.t.Fatalf("%s: rein runs show %s: %v\n%s", pr.p.name, id, err, out)
	}
	return r
}

var probeKey = regexp.MustCompile(`[0-9a-f-]{36}/[^\s,;)]+`)

// decide is the person: an approval is approved; a call whose outcome is
// unknown is looked up in the ledger — settled when its effect is there,
// approved (made again) when it is not.
func (pr *prober) decide(id, step, kind, message string) {
	pr.tally.decisions++
	verdict := "approve"
	careless := os.Getenv("REIN_PROBE_CARELESS") != "" // a check of the probe: it must count repeats
	if !careless && (kind == "unknown" || strings.Contains(message, "dispatched and the process stopped")) {
		if pr.happened(id, step, message) {
			verdict = "settle"
		}
	}
	args := []string{"runs", verdict, id, step, "--no-resume", "--by", "probe"}
	if verdict == "settle" {
		pr.settled = true
		value := `{"ok": true}`
		if strings.HasPrefix(pr.p.name, "for_each") {
			value = `[{"ok": true}, {"ok": true}, {"ok": true}]`
		}
		args = append(args, "--value", value)
	}
	_, _ = pr.rein(0, args...)
}

// happened reports whether the ledger holds the call a question is about:
// the key its message names, or a key of its step (any attempt; an agent
// call's step/attempt/turn/call).
func (pr *prober) happened(id, step, message string) bool {
	keys := map[string]bool{}
	for _, line := range ledgerLines(pr.t, pr.ledger()) {
		if f := strings.Fields(line); len(f) > 1 {
			keys[f[1]] = true
		}
	}
	for _, k := range probeKey.FindAllString(message, -1) {
		if strings.HasPrefix(k, id+"/") {
			return keys[strings.TrimRight(k, ".")]
		}
	}
	head, rest, _ := strings.Cut(step, "/")
	for k := range keys {
		k, ok := strings.CutPrefix(k, id+"/")
		if !ok {
			continue
		}
		if k == step || strings.HasPrefix(k, step+"/") {
			return true
		}
		if h, r, ok := strings.Cut(k, "/"); ok && rest != "" && h == head {
			if _, after, ok := strings.Cut(r, "/"); ok && after == rest {
				return true
			}
		}
	}
	return false
}

// mcpTrial: a rein mcp process serves pay to a host whose user accepts;
// it is killed at random while the call may run. The host's user then
// looks at the ledger and, only if the payment is not there, asks a new
// process for it (a person's decision).
func (pr *prober) mcpTrial() {
	pr.tally.runs++
	serve := func() (*sdk.ClientSession, *exec.Cmd, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.Command(pr.bin, "mcp", "--db", pr.db(), pr.dir)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "probe"}, answering("accept", nil)).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			pr.t.Fatal(err)
		}
		return cs, cmd, cancel
	}
	cs, cmd, cancel := serve()
	done := make(chan struct{})
	begin := time.Now()
	go func() {
		defer close(done)
		_, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "pay", Arguments: map[string]any{"ref": "a"}})
	}()
	if pr.span > 0 && pr.rng.Float64() < 0.8 {
		time.Sleep(time.Duration(pr.rng.Int64N(int64(pr.span))))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		pr.tally.kills++
	}
	<-done
	if pr.took == 0 {
		pr.took = time.Since(begin)
	}
	cs.Close()
	_ = cmd.Wait()
	cancel()
	time.Sleep(200 * time.Millisecond) // a tool the kill orphaned finishes its write
	if len(ledgerLines(pr.t, pr.ledger())) > 0 {
		return
	}
	pr.tally.decisions++ // the host's user asks again
	cs, cmd, cancel = serve()
	_, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "pay", Arguments: map[string]any{"ref": "a"}})
	cs.Close()
	_ = cmd.Wait()
	cancel()
}

// count adds the trial's duplicates and lost effects to the tally.
func (pr *prober) count() {
	made := map[string]int{} // run (or trial, for mcp) + tool/ref → executions
	for _, line := range ledgerLines(pr.t, pr.ledger()) {
		f := strings.SplitN(line, " ", 3)
		if len(f) < 3 {
			continue
		}
		var args struct{ Ref string }
		_ = json.Unmarshal([]byte(f[2]), &args)
		made[f[0]+"/"+args.Ref]++
	}
	for effect, n := range made {
		if n > 1 {
			pr.tally.duplicates += n - 1
			pr.t.Errorf("%s: %s made %d times: %q", pr.p.name, effect, n, ledgerLines(pr.t, pr.ledger()))
		}
	}
	status := ""
	switch {
	case pr.p.adapter:
		if pr.task != "" {
			status = pr.show(pr.task).Run.Status
		}
	case !pr.p.mcp:
		if id := pr.runID(); id != "" {
			status = pr.show(id).Run.Status
		}
	}
	if os.Getenv("REIN_PROBE_VERBOSE") != "" {
		pr.t.Logf("%s: run %s, settled %v, ledger %q", pr.p.name, status, pr.settled, ledgerLines(pr.t, pr.ledger()))
	}
	if pr.settled {
		return
	}
	ended := pr.p.mcp || status == pr.p.end && (pr.p.remedy == "" || pr.remedied)
	if !ended {
		if pr.span == 0 {
			// the unkilled trial must end as it should, or the path
			// proves nothing.
			pr.t.Errorf("%s: the trial that was not killed ended %q (remediated %v), want %s: %q", pr.p.name, status, pr.remedied, pr.p.end, ledgerLines(pr.t, pr.ledger()))
		}
		return
	}
	for _, e := range pr.p.effects {
		if made[e] == 0 {
			pr.tally.lost++
			pr.t.Errorf("%s: the run ended %s without %s: %q", pr.p.name, pr.p.end, e, ledgerLines(pr.t, pr.ledger()))
		}
	}
}
