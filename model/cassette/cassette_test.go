package cassette_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/cassette"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func msgs(prompt string) []model.Message {
	return []model.Message{
		{Role: model.System, Content: "Reply with JSON"},
		{Role: model.User, Content: prompt},
	}
}

func req(step, prompt string) *model.Request {
	return &model.Request{Model: "gpt-4o-mini", StepID: step, RunID: "run-1", Messages: msgs(prompt)}
}

// echo answers "<step>: <prompt> #<n>", n counting calls; prompts starting
// with "fail" fail with a transient error that still reports usage.
func echo() model.Model {
	var mu sync.Mutex
	n := 0
	return model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if strings.HasPrefix(req.Prompt(), "fail") {
			return &model.Response{Usage: model.Usage{In: 3}}, fault.TransientErr(errors.New("upstream 503"))
		}
		return &model.Response{Text: fmt.Sprintf("%s: %s #%d", req.StepID, req.Prompt(), k), Usage: model.Usage{In: k, Out: 2 * k}, Model: "gpt-4o-mini-2024-07-18"}, nil
	})
}

func record(t *testing.T, m model.Model, reqs ...*model.Request) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.cassette.json")
	r, err := cassette.Record(m, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range reqs {
		_, _ = r.Generate(context.Background(), q)
	}
	if r.Len() != len(reqs) {
		t.Errorf("recorded %d exchanges, want %d", r.Len(), len(reqs))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRecordReplay(t *testing.T) {
	t.Parallel()
	route := &model.Request{Model: "gpt-4o-mini", StepID: "triage", Decision: "route", Messages: msgs("charged twice"), Schema: json.RawMessage(`{"type":"object"}`)}
	reqs := []*model.Request{
		req("extract", "resume"),
		req("score", "fail once"),
		route,
		req("extract", "resume"), // the same request again: a second answer
	}
	path := record(t, echo(), reqs...)

	p, err := cassette.Replay(path)
	if err != nil {
		t.Fatal(err)
	}
	// A new run: other run id and attempt, same requests.
	type want struct {
		text  string
		usage model.Usage
		class fault.Class
		msg   string
	}
	wants := []want{
		{text: "extract: resume #1", usage: model.Usage{In: 1, Out: 2}},
		{usage: model.Usage{In: 3}, class: fault.Transient, msg: "upstream 503"},
		{text: "triage: charged twice #3", usage: model.Usage{In: 3, Out: 6}},
		{text: "extract: resume #4", usage: model.Usage{In: 4, Out: 8}},
	}
	for i, q := range reqs {
		again := *q
		again.RunID, again.Attempt = "run-2", 3
		resp, err := p.Generate(context.Background(), &again)
		w := wants[i]
		if w.class != "" {
			if fault.ClassOf(err) != w.class || err.Error() != w.msg {
				t.Errorf("call %d: err = %v (class %q), want %q (%s)", i, err, fault.ClassOf(err), w.msg, w.class)
			}
		} else if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
		if resp == nil || resp.Text != w.text || resp.Usage != w.usage {
			t.Errorf("call %d: response = %+v, want text %q usage %+v", i, resp, w.text, w.usage)
		} else if w.class == "" && resp.Model != "gpt-4o-mini-2024-07-18" {
			t.Errorf("call %d: model = %q", i, resp.Model)
		}
	}
	if u := p.(*cassette.Player).Unused(); u != 0 {
		t.Errorf("Unused = %d after replaying everything", u)
	}
}

func TestReplayMiss(t *testing.T) {
	t.Parallel()
	path := record(t, echo(), req("extract", "resume of Zhang"))
	long := strings.Repeat("word ", 40)
	tests := []struct {
		name string
		req  *model.Request
		want string
	}{
		{"another step", req("notify", long), `cassette ` + path + ` holds no exchange for step "notify" (prompt "` + long[:60] + `…"): record the cassette again`},
		{"changed prompt", req("extract", "resume of Li"), `cassette ` + path + ` holds no exchange for step "extract" (prompt "resume of Li"); it holds 1 exchange(s) for this step with another model, decision, prompt, schema or tools: record the cassette again`},
		{"other model", &model.Request{Model: "gpt-4o", StepID: "extract", Messages: msgs("resume of Zhang")}, `holds 1 exchange(s) for this step with another model`},
		{"other decision", &model.Request{Model: "gpt-4o-mini", StepID: "extract", Decision: "plan", Messages: msgs("resume of Zhang")}, `holds 1 exchange(s) for this step with another model`},
	}
	p, err := cassette.Replay(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		_, err := p.Generate(context.Background(), tt.req)
		if fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v (class %q)\nwant a business error containing %s", tt.name, err, fault.ClassOf(err), tt.want)
		}
	}
	if _, err := p.Generate(context.Background(), req("extract", "resume of Zhang")); err != nil {
		t.Fatalf("the held request: %v", err)
	}
	_, err = p.Generate(context.Background(), req("extract", "resume of Zhang"))
	if want := `cassette ` + path + ` holds no exchange for step "extract" (prompt "resume of Zhang"); it holds this request 1 time(s), all replayed already: record the cassette again`; err == nil || err.Error() != want {
		t.Errorf("replayed twice: err = %v\nwant %s", err, want)
	}
}

func TestReplayContext(t *testing.T) {
	t.Parallel()
	path := record(t, echo(), req("a", "p"))
	p, err := cassette.Replay(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Generate(ctx, req("a", "p")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v", err)
	}
	if resp, err := p.Generate(context.Background(), req("a", "p")); err != nil || resp.Text != "a: p #1" {
		t.Errorf("after a cancelled call: %v, %v; want the exchange still there", resp, err)
	}
	if _, err := p.Generate(context.Background(), nil); fault.ClassOf(err) != fault.Business {
		t.Errorf("nil request: %v", err)
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	base := func() *model.Request {
		return &model.Request{Model: "m", Decision: "plan", Messages: msgs("p"), Schema: json.RawMessage(`{"type":"object","required":["goal"]}`), StepID: "s", RunID: "r", Attempt: 1}
	}
	k := cassette.Key(base())
	if len(k) != 64 {
		t.Fatalf("Key = %q, want 64 hex digits", k)
	}
	same := map[string]func(*model.Request){
		"run id":     func(r *model.Request) { r.RunID = "other" },
		"step id":    func(r *model.Request) { r.StepID = "other" },
		"attempt":    func(r *model.Request) { r.Attempt = 7 },
		"corrective": func(r *model.Request) { r.Corrective = true },
		"schema spacing": func(r *model.Request) {
			r.Schema = json.RawMessage(" {\"required\": [\"goal\"],\n \"type\": \"object\"} ")
		},
	}
	for name, f := range same {
		r := base()
		f(r)
		if cassette.Key(r) != k {
			t.Errorf("%s changed the key", name)
		}
	}
	differ := map[string]func(*model.Request){
		"model":      func(r *model.Request) { r.Model = "m2" },
		"decision":   func(r *model.Request) { r.Decision = "route" },
		"prompt":     func(r *model.Request) { r.Messages[1].Content = "q" },
		"role":       func(r *model.Request) { r.Messages[1].Role = model.Assistant },
		"extra turn": func(r *model.Request) { r.Messages = append(r.Messages, model.Message{Role: model.User}) },
		"schema":     func(r *model.Request) { r.Schema = json.RawMessage(`{"type":"object"}`) },
		"no schema":  func(r *model.Request) { r.Schema = nil },
		"bad schema": func(r *model.Request) { r.Schema = json.RawMessage(`{`) },
		"split prompt": func(r *model.Request) {
			r.Messages = []model.Message{{Role: model.System, Content: "Reply with JSONp"}}
		},
	}
	for name, f := range differ {
		r := base()
		f(r)
		if cassette.Key(r) == k {
			t.Errorf("%s did not change the key", name)
		}
	}
}

func TestFormatGolden(t *testing.T) {
	t.Parallel()
	route := &model.Request{Model: "gpt-4o-mini", StepID: "triage", Decision: "route", Corrective: true,
		Messages: msgs("charged <twice> & more"), Schema: json.RawMessage(`{"type":"object","properties":{"route":{"enum":["account","general"]}}}`)}
	path := record(t, echo(), route, req("score", "fail"))
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "format.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("cassette differs from %s (go test -update to accept):\n%s", golden, got)
	}
	if _, err := cassette.Parse(want, golden); err != nil {
		t.Errorf("the golden cassette does not parse: %v", err)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	c, err := cassette.Parse([]byte(`{"version": 1, "exchanges": [
  {"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, "response": {"text": "hello", "usage": {"in": 1, "out": 1}}},
  {"key": "`+strings.Repeat("a", 64)+`", "request": {"messages": []}, "error": {"class": "business", "message": "no"}}
]}`), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if k := cassette.Key(&model.Request{Model: "m", Messages: []model.Message{{Role: model.User, Content: "hi"}}}); c.Exchanges[0].Key != k {
		t.Errorf("key of a hand-written exchange = %q, want it computed (%s)", c.Exchanges[0].Key, k)
	}
	if c.Exchanges[1].Key != strings.Repeat("a", 64) {
		t.Errorf("a given key was replaced: %q", c.Exchanges[1].Key)
	}
	if c, err := cassette.Parse([]byte(`{"version":1}`), ""); err != nil || c.Exchanges == nil || len(c.Exchanges) != 0 {
		t.Errorf("no exchanges: %+v, %v", c, err)
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"empty", " \n", "cassette c.json is empty: record the cassette again"},
		{"syntax", "{\"version\": 1,\n  \"exchanges\": [,]}", "cassette c.json:2:17: not valid JSON: invalid character ',' looking for beginning of value (the file is corrupt: record the cassette again)"},
		{"truncated", `{"version": 1, "exchanges": [{"request"`, "cassette c.json: truncated JSON (the file ends early: was the recording interrupted? record the cassette again)"},
		{"not an object", `[1]`, "cassette c.json:1:1: the cassette: got JSON array, want object"},
		{"no version", `{"exchanges": []}`, `cassette c.json has no "version": it is not a rein cassette`},
		{"newer", `{"version": 2, "exchanges": [], "future": true}`, "cassette c.json is version 2, newer than this rein reads (1): upgrade rein or record the cassette again"},
		{"version zero", `{"version": 0}`, "cassette c.json has version 0: versions start at 1"},
		{"version string", `{"version": "1"}`, "cassette c.json:1:13: version: got JSON string, want integer"},
		{"wrong type", "{\"version\": 1, \"exchanges\": [{\"request\": {\"messages\": [{\"role\": \"user\", \"content\": 5}]}}]}", "cassette c.json:1:84: exchanges.request.messages.content: got JSON number, want string"},
		{"unknown field", `{"version": 1, "exchanges": [{"reqest": {}}]}`, `cassette c.json: unknown field "reqest"`},
		{"trailing", "{\"version\": 1}\n{\"version\": 1}", "cassette c.json:2:1: unexpected text after the cassette's JSON object"},
		{"exchange problems", `{"version": 1, "exchanges": [{"request": {"messages": []}}, {"key": "xyz", "request": {"messages": []}, "error": {"class": "oops", "message": "m"}}]}`,
			`cassette c.json: exchanges[0]: has neither "response" nor "error"; exchanges[1]: key must be 64 lowercase hex digits (a sha256), got "xyz"; delete it to have it computed; exchanges[1]: error class "oops" is not one of transient, format, business, budget, policy, conflict, not_found, cancelled`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := cassette.Parse([]byte(tt.src), "c.json")
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := cassette.Replay(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n  \"version\": 1,\n  oops\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cassette.Replay(bad); err == nil || !strings.HasPrefix(err.Error(), "cassette "+bad+":3:3: not valid JSON") {
		t.Errorf("corrupt file: %v", err)
	}
}

func TestRecorderLifecycle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := cassette.Record(echo(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Generate(context.Background(), req("a", "p")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("the cassette was written before Close: %q", b)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	c, err := cassette.Read(path)
	if err != nil || len(c.Exchanges) != 1 || c.Version != 1 {
		t.Fatalf("Read = %+v, %v; want one exchange", c, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, %v; want 0644", st.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the cassette (no temp file left)", len(entries))
	}
	if _, err := r.Generate(context.Background(), req("a", "p")); fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "is closed") {
		t.Errorf("Generate after Close: %v", err)
	}

	if _, err := cassette.Record(echo(), filepath.Join(dir, "no", "such", "c.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Record into a missing directory: %v", err)
	}
	if _, err := cassette.Record(nil, path); err == nil {
		t.Error("Record(nil) succeeded")
	}
	if _, err := cassette.Record(echo(), path+"/x"); err == nil {
		t.Error("Record under a file succeeded")
	}

	// A directory that disappears makes Close fail and leaves nothing behind.
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err = cassette.Record(echo(), filepath.Join(gone, "c.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err == nil || !strings.Contains(err.Error(), "write cassette "+filepath.Join(gone, "c.json")) {
		t.Errorf("Close into a removed directory: %v", err)
	}
}

func TestRecordSkipsCancelledCalls(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.json")
	slow := model.Func(func(ctx context.Context, _ *model.Request) (*model.Response, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	r, err := cassette.Record(slow, path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Generate(ctx, req("a", "p")); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the model's cancellation", err)
	}
	if r.Len() != 0 {
		t.Errorf("recorded %d exchanges of a cancelled call", r.Len())
	}
}

func TestRecordSnapshotsRequest(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.json")
	r, err := cassette.Record(echo(), path)
	if err != nil {
		t.Fatal(err)
	}
	q := req("a", "before")
	if _, err := r.Generate(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	q.Messages[1].Content = "after" // the caller reuses its request
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := cassette.Replay(path)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := p.Generate(context.Background(), req("a", "before")); err != nil || resp.Text != "a: before #1" {
		t.Errorf("replay = %v, %v", resp, err)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.json")
	r, err := cassette.Record(echo(), path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, _ = r.Generate(context.Background(), req("s", fmt.Sprint("p", i%4)))
			r.Redact(fmt.Sprint("secret-value-", i))
		})
	}
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := cassette.Replay(path)
	if err != nil {
		t.Fatal(err)
	}
	texts := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			resp, err := p.Generate(context.Background(), req("s", fmt.Sprint("p", i%4)))
			if err != nil {
				t.Error(err)
				return
			}
			texts <- resp.Text
		})
	}
	wg.Wait()
	close(texts)
	seen := map[string]bool{}
	for s := range texts {
		if seen[s] {
			t.Errorf("exchange %q replayed twice", s)
		}
		seen[s] = true
	}
	if len(seen) != n {
		t.Errorf("replayed %d distinct exchanges, want %d", len(seen), n)
	}
	if _, err := p.Generate(context.Background(), req("s", "p0")); err == nil {
		t.Error("a 33rd call was answered")
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	path := record(t, echo(), req("a", "x"), req("b", "fail"))
	c, err := cassette.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("\n  \"exchanges\": [\n")) {
		t.Errorf("cassette is not indented:\n%s", data)
	}
	want := []cassette.Exchange{
		{Key: cassette.Key(req("a", "x")), Request: cassette.Request{Model: "gpt-4o-mini", Step: "a", Messages: msgs("x")},
			Response: &cassette.Response{Text: "a: x #1", Usage: model.Usage{In: 1, Out: 2}, Model: "gpt-4o-mini-2024-07-18"}},
		{Key: cassette.Key(req("b", "fail")), Request: cassette.Request{Model: "gpt-4o-mini", Step: "b", Messages: msgs("fail")},
			Response: &cassette.Response{Usage: model.Usage{In: 3}}, Error: &cassette.Error{Class: fault.Transient, Message: "upstream 503"}},
	}
	if !reflect.DeepEqual(c.Exchanges, want) {
		t.Errorf("exchanges\n got %+v\nwant %+v", c.Exchanges, want)
	}
}
