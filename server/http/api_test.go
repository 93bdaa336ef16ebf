package http_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/reinhq/rein/runs"
	reinhttp "github.com/reinhq/rein/server/http"
)

// waitStatus polls the run until it has status want (bounded).
func (e *env) waitStatus(token, id, want string) runs.View {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var v runs.View
		r := e.do("GET", "/v1/runs/"+id, token, nil)
		if r.status != http.StatusOK {
			e.t.Fatalf("GET run %s: %d %s", id, r.status, r.body)
		}
		r.json(e.t, &v)
		if string(v.Run.Status) == want {
			return v
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("run %s is %s, want %s", id, v.Run.Status, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A refund over 100 waits for a person: the approvals inbox shows it with
// its message, a decision by the token's name continues it in the server.
func TestDecisionContinuesWaitingRun(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true})
	alice := e.token("alice", "acme", "run", "approve")
	s := e.start(alice, bigRefund)
	if s.Status != "waiting" {
		t.Fatalf("the refund of 240 is %s, want waiting", s.Status)
	}
	var inbox struct {
		Approvals []reinhttp.PendingApproval `json:"approvals"`
	}
	e.do("GET", "/v1/approvals", alice, nil).json(t, &inbox)
	if len(inbox.Approvals) != 1 || inbox.Approvals[0].RunID != s.RunID || inbox.Approvals[0].StepID != "review" ||
		!strings.Contains(inbox.Approvals[0].Message, "Refund 240 EUR") || inbox.Approvals[0].Flow != "refund" {
		t.Fatalf("approvals = %s", jsonOf(inbox))
	}
	r := e.do("POST", "/v1/runs/"+s.RunID+"/decisions", alice, map[string]any{"step": "review", "decision": "approve", "comment": "ok"})
	if r.status != http.StatusOK {
		t.Fatalf("decide: %d %s", r.status, r.body)
	}
	v := e.waitStatus(alice, s.RunID, "succeeded")
	if len(v.Approvals) != 1 || v.Approvals[0].DecidedBy != "alice" || v.Approvals[0].Comment != "ok" {
		t.Errorf("approvals after the decision = %s", jsonOf(v.Approvals))
	}
	// deciding again is a conflict, with the CLI's hint
	r = e.do("POST", "/v1/runs/"+s.RunID+"/decisions", alice, map[string]any{"step": "review", "decision": "reject"})
	if p := r.problem(t); r.status != http.StatusConflict || p.Class != "conflict" || p.Hint == nil {
		t.Errorf("second decision: %d %+v", r.status, p)
	}
	e.do("GET", "/v1/approvals", alice, nil).json(t, &inbox)
	if len(inbox.Approvals) != 0 {
		t.Errorf("approvals after the decision = %s", jsonOf(inbox))
	}
}

func TestIdempotentStart(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true})
	a := e.token("a", "acme", "run")
	b := e.token("b", "globex", "run")
	first := e.do("POST", "/v1/runs", a, smallRefund, "Idempotency-Key", "order-1")
	again := e.do("POST", "/v1/runs", a, smallRefund, "Idempotency-Key", "order-1")
	other := e.do("POST", "/v1/runs", b, smallRefund, "Idempotency-Key", "order-1")
	var s1, s2, s3 reinhttp.Started
	first.json(t, &s1)
	again.json(t, &s2)
	other.json(t, &s3)
	if first.status != http.StatusAccepted || s1.RunID == "" || s1.Existing {
		t.Errorf("first start: %d %s", first.status, first.body)
	}
	if again.status != http.StatusOK || s2.RunID != s1.RunID || !s2.Existing {
		t.Errorf("same key again: %d %s, want run %s", again.status, again.body, s1.RunID)
	}
	if s3.RunID == s1.RunID || s3.Existing {
		t.Errorf("another tenant's start with the same key returned %s", other.body)
	}
	r := e.do("POST", "/v1/runs", a, smallRefund, "Idempotency-Key", "clé")
	if r.status != http.StatusBadRequest {
		t.Errorf("a key with a control character: %d %s", r.status, r.body)
	}
}

func TestAuthScopesAndTenants(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true})
	acme := e.token("alice", "acme", "run", "approve")
	reader := e.token("rita", "acme", "read")
	globex := e.token("gus", "globex", "admin")
	s := e.start(acme, bigRefund)

	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		status                    int
	}{
		{"no token", "GET", "/v1/runs", "", nil, 401},
		{"bad token", "GET", "/v1/runs", "rein_forged", nil, 401},
		{"not bearer", "GET", "/v1/runs", "", nil, 401},
		{"read cannot start", "POST", "/v1/runs", reader, smallRefund, 403},
		{"read cannot decide", "POST", "/v1/runs/" + s.RunID + "/decisions", reader, map[string]any{"step": "review", "decision": "approve"}, 403},
		{"read cannot cancel", "POST", "/v1/runs/" + s.RunID + "/cancel", reader, nil, 403},
		{"read cannot remediate", "POST", "/v1/runs/" + s.RunID + "/remediate", reader, map[string]any{"premise": "lookup"}, 403},
		{"metrics need admin", "GET", "/metrics", acme, nil, 403},
		{"mcp needs admin", "POST", "/mcp", reader, "{}", 403},
		{"other tenant's run", "GET", "/v1/runs/" + s.RunID, globex, nil, 404},
		{"other tenant's events", "GET", "/v1/runs/" + s.RunID + "/events", globex, nil, 404},
		{"other tenant's artifacts", "GET", "/v1/runs/" + s.RunID + "/artifacts", globex, nil, 404},
		{"other tenant's artifact", "GET", "/v1/runs/" + s.RunID + "/artifacts/lookup", globex, nil, 404},
		{"other tenant's effects", "GET", "/v1/runs/" + s.RunID + "/effects", globex, nil, 404},
		{"other tenant's decision", "POST", "/v1/runs/" + s.RunID + "/decisions", globex, map[string]any{"step": "review", "decision": "approve"}, 404},
		{"other tenant's cancel", "POST", "/v1/runs/" + s.RunID + "/cancel", globex, nil, 404},
		{"no such run", "GET", "/v1/runs/nope", acme, nil, 404},
		{"a prefix is not an id", "GET", "/v1/runs/" + s.RunID[:8], acme, nil, 404},
		{"last is not an id", "GET", "/v1/runs/last", acme, nil, 404},
		{"read reads", "GET", "/v1/runs/" + s.RunID, reader, nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.name == "not bearer" {
				hdr = []string{"Authorization", "Basic YTpi"}
			}
			r := e.do(tc.method, tc.path, tc.token, tc.body, hdr...)
			if r.status != tc.status {
				t.Fatalf("%s %s: %d, want %d\n%s", tc.method, tc.path, r.status, tc.status, r.body)
			}
			if tc.status >= 400 {
				p := r.problem(t)
				if strings.Contains(string(r.body), "acme") && tc.token == globex {
					t.Errorf("the answer to another tenant names the run's tenant: %s", r.body)
				}
				if tc.status == 401 && r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("401 without WWW-Authenticate")
				}
				_ = p
			}
		})
	}
	var inbox struct {
		Approvals []reinhttp.PendingApproval `json:"approvals"`
	}
	e.do("GET", "/v1/approvals", globex, nil).json(t, &inbox)
	if len(inbox.Approvals) != 0 {
		t.Errorf("another tenant's inbox shows %s", jsonOf(inbox))
	}
	var page struct {
		Runs []map[string]any `json:"runs"`
	}
	e.do("GET", "/v1/runs", globex, nil).json(t, &page)
	if len(page.Runs) != 0 {
		t.Errorf("another tenant's list shows %d runs", len(page.Runs))
	}
	// a revoked token stops working at once
	if _, err := e.tokens.Revoke("rita"); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/runs", reader, nil); r.status != 401 {
		t.Errorf("revoked token: %d", r.status)
	}
}

func TestListRunsPages(t *testing.T) {
	e := newEnv(t, envOpts{})
	var ids []string
	for range 3 {
		ids = append(ids, e.start("", smallRefund).RunID)
	}
	var p1, p2 reinhttp.RunsPage
	var rows1, rows2 struct {
		Runs []struct {
			ID     string `json:"id"`
			Tenant string `json:"tenant"`
		} `json:"runs"`
		Next string `json:"next_cursor"`
	}
	r := e.do("GET", "/v1/runs?limit=2", "", nil)
	r.json(t, &p1)
	r.json(t, &rows1)
	if len(rows1.Runs) != 2 || rows1.Runs[0].ID != ids[2] || rows1.Runs[1].ID != ids[1] || rows1.Next != ids[1] {
		t.Fatalf("first page = %s", r.body)
	}
	r = e.do("GET", "/v1/runs?limit=2&cursor="+rows1.Next, "", nil)
	r.json(t, &p2)
	r.json(t, &rows2)
	if len(rows2.Runs) != 1 || rows2.Runs[0].ID != ids[0] || rows2.Next != "" {
		t.Fatalf("second page = %s", r.body)
	}
	if r := e.do("GET", "/v1/runs?status=succeeded&flow=refund", "", nil); r.status != 200 || bytes.Count(r.body, []byte(`"flow":"refund"`)) != 3 {
		t.Errorf("status and flow filter: %d %s", r.status, r.body)
	}
	for _, q := range []string{"status=done", "limit=0", "limit=x"} {
		if r := e.do("GET", "/v1/runs?"+q, "", nil); r.status != 400 {
			t.Errorf("?%s: %d", q, r.status)
		} else {
			r.problem(t)
		}
	}
}

// sse reads a stream's events: ids and kinds, up to event: end.
func sse(t *testing.T, body []byte) (ids []int64, kinds []string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			n, err := strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				t.Fatalf("id line %q", line)
			}
			ids = append(ids, n)
		case strings.HasPrefix(line, "event: "):
			kinds = append(kinds, strings.TrimPrefix(line, "event: "))
		}
	}
	return ids, kinds
}

func TestEventsResumeFromLastEventID(t *testing.T) {
	e := newEnv(t, envOpts{})
	s := e.start("", smallRefund)
	e.waitStatus("", s.RunID, "succeeded")
	r := e.do("GET", "/v1/runs/"+s.RunID+"/events", "", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", r.status, r.header.Get("Content-Type"))
	}
	ids, kinds := sse(t, r.body)
	if len(ids) < 4 || kinds[0] != "run_started" || kinds[len(kinds)-1] != "end" {
		t.Fatalf("stream ids %v kinds %v", ids, kinds)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			t.Fatalf("ids %v are not consecutive", ids)
		}
	}
	mid := ids[len(ids)/2]
	r = e.do("GET", "/v1/runs/"+s.RunID+"/events", "", nil, "Last-Event-ID", fmt.Sprint(mid))
	rest, _ := sse(t, r.body)
	if len(rest) == 0 || rest[0] != mid+1 || rest[len(rest)-1] != ids[len(ids)-1] {
		t.Errorf("resumed after %d: ids %v, want %d…%d", mid, rest, mid+1, ids[len(ids)-1])
	}
	for _, bad := range []string{"abc", "-1", "1e3", fmt.Sprint(ids[len(ids)-1] + 1)} {
		r := e.do("GET", "/v1/runs/"+s.RunID+"/events", "", nil, "Last-Event-ID", bad)
		if r.status != 400 {
			t.Errorf("Last-Event-ID %q: %d", bad, r.status)
		} else {
			r.problem(t)
		}
	}
}

// A stream of a waiting run sends what is committed as it is: the events
// after the decision arrive on the open stream, which ends with the run.
func TestEventsLive(t *testing.T) {
	e := newEnv(t, envOpts{})
	s := e.start("", bigRefund)
	got := make(chan reply, 1)
	go func() { got <- e.do("GET", "/v1/runs/"+s.RunID+"/events", "", nil) }()
	if r := e.do("POST", "/v1/runs/"+s.RunID+"/decisions", "", map[string]any{"step": "review", "decision": "approve"}); r.status != 200 {
		t.Fatalf("decide: %d %s", r.status, r.body)
	}
	r := <-got
	_, kinds := sse(t, r.body)
	if !contains(kinds, "run_waiting") || !contains(kinds, "run_settled") || kinds[len(kinds)-1] != "end" {
		t.Errorf("live stream kinds %v", kinds)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, envOpts{})
	big := `{"flow":"refund","input":{"reason":"` + strings.Repeat("x", 2<<20) + `"}}`
	for _, tc := range []struct {
		name    string
		body    any
		status  int
		pointer string
	}{
		{"oversized", big, 413, ""},
		{"malformed", `{"flow":`, 400, ""},
		{"not an object", `[1]`, 400, ""},
		{"unknown field", `{"flow":"refund","bogus":1}`, 400, "/bogus"},
		{"wrong type", `{"flow":3}`, 400, "/flow"},
		{"two values", `{"flow":"refund"} {}`, 400, ""},
		{"empty", ``, 400, ""},
		{"neither", `{}`, 400, "/flow"},
		{"both", `{"flow":"refund","agent":"x"}`, 400, "/agent"},
		{"unknown flow", `{"flow":"nope"}`, 404, "/flow"},
		{"invalid input", `{"flow":"refund","input":{"order":"x"}}`, 422, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", "/v1/runs", "", tc.body)
			if r.status != tc.status {
				t.Fatalf("%d, want %d: %s", r.status, tc.status, r.body)
			}
			if p := r.problem(t); p.Pointer != tc.pointer {
				t.Errorf("pointer %q, want %q (%s)", p.Pointer, tc.pointer, p.Message)
			}
		})
	}
	s := e.start("", smallRefund)
	for _, tc := range []struct{ body any }{{`{"step":"review","decision":"maybe"}`}, {`{"decision":"approve"}`}, {`{"step":"review","decision":"approve","by":"mallory"}`}} {
		if r := e.do("POST", "/v1/runs/"+s.RunID+"/decisions", "", tc.body); r.status != 400 {
			t.Errorf("decision %v: %d %s", tc.body, r.status, r.body)
		}
	}
	if r := e.do("GET", "/v1/nowhere", "", nil); r.status != 404 {
		t.Errorf("unknown route: %d", r.status)
	} else {
		r.problem(t)
	}
}

func TestArtifactsStayInTheirFolder(t *testing.T) {
	deliveries := t.TempDir()
	e := newEnv(t, envOpts{deliveryDir: deliveries})
	s := e.start("", smallRefund)
	e.waitStatus("", s.RunID, "succeeded")
	runDir := filepath.Join(deliveries, s.RunID)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "deliverables.csv"), []byte("a,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(deliveries, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(runDir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	base := "/v1/runs/" + s.RunID + "/artifacts"
	if r := e.do("GET", base, "", nil); r.status != 200 || !bytes.Contains(r.body, []byte(`"deliverables.csv"`)) || !bytes.Contains(r.body, []byte(`"step_id":"lookup"`)) {
		t.Errorf("list: %d %s", r.status, r.body)
	}
	if r := e.do("GET", base+"/lookup", "", nil); r.status != 200 || !bytes.Contains(r.body, []byte(`"customer"`)) {
		t.Errorf("a step's artifact: %d %s", r.status, r.body)
	}
	if r := e.do("GET", base+"/deliverables.csv", "", nil); r.status != 200 || string(r.body) != "a,b\n" ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment") {
		t.Errorf("a delivery: %d %q %v", r.status, r.body, r.header)
	}
	for _, name := range []string{"..%2Fsecret.txt", "..%2F..%2F..%2Fetc%2Fpasswd", "link.txt", "%2E%2E", "a%5Cb"} {
		r := e.do("GET", base+"/"+name, "", nil)
		if r.status < 400 || r.status >= 500 || bytes.Contains(r.body, []byte("top secret")) || bytes.Contains(r.body, []byte("root:")) {
			t.Errorf("artifact %s: %d %s", name, r.status, r.body)
		} else {
			r.problem(t)
		}
	}
	if r := e.do("GET", base+"/nope.csv", "", nil); r.status != 404 {
		t.Errorf("a missing artifact: %d", r.status)
	}
}

func TestSafetyViews(t *testing.T) {
	e := newEnv(t, envOpts{})
	s := e.start("", smallRefund)
	e.waitStatus("", s.RunID, "succeeded")
	base := "/v1/runs/" + s.RunID
	for _, path := range []string{"/effects", "/why?step=refund", "/impact?premise=lookup", "/artifacts"} {
		if r := e.do("GET", base+path, "", nil); r.status != 200 || !json200(r) {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	if r := e.do("GET", base+"/impact", "", nil); r.status != 400 {
		t.Errorf("impact without a premise: %d", r.status)
	}
	if r := e.do("POST", base+"/cancel", "", nil); r.status != 409 || r.problem(t).Class != "conflict" {
		t.Errorf("cancel a finished run: %d %s", r.status, r.body)
	}
}

func json200(r reply) bool {
	return r.header.Get("Content-Type") == "application/json" && len(r.body) > 2
}

func TestCancelWaitingRun(t *testing.T) {
	e := newEnv(t, envOpts{})
	s := e.start("", bigRefund)
	r := e.do("POST", "/v1/runs/"+s.RunID+"/cancel", "", map[string]any{"reason": "customer called"})
	var got reinhttp.Started
	r.json(t, &got)
	if r.status != 200 || got.Status != "cancelled" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
}

func TestHeadersHealthAndRateLimit(t *testing.T) {
	e := newEnv(t, envOpts{rate: 3})
	r := e.do("GET", "/healthz", "", nil)
	if r.status != 200 {
		t.Fatalf("healthz: %d", r.status)
	}
	for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
		if r.header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, r.header.Get(k), v)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for e.do("GET", "/readyz", "", nil).status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	pre := e.do("OPTIONS", "/v1/runs", "", nil, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if pre.header.Get("Access-Control-Allow-Origin") != "" || pre.status != http.StatusMethodNotAllowed || pre.header.Get("Allow") != "GET, POST" {
		t.Errorf("a CORS preflight: %d %v", pre.status, pre.header)
	}
	if r := e.do("DELETE", "/v1/runs/x", "", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE a run: %d", r.status)
	}
	codes := []int{}
	for range 5 {
		codes = append(codes, e.do("GET", "/v1/flows", "", nil).status)
	}
	if codes[0] != 200 || codes[len(codes)-1] != 429 {
		t.Errorf("statuses with a burst of 3: %v", codes)
	}
}

func TestMetricsParse(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true})
	admin := e.token("ops", "acme", "admin")
	s := e.start(admin, smallRefund)
	e.waitStatus(admin, s.RunID, "succeeded")
	e.start(admin, bigRefund)
	r := e.do("GET", "/metrics", admin, nil)
	if r.status != 200 {
		t.Fatalf("metrics: %d %s", r.status, r.body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	gauge := func(name, status string) float64 {
		f := fams[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
		for _, m := range f.Metric {
			if status == "" || len(m.Label) == 1 && m.Label[0].GetValue() == status {
				return m.GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s{status=%q}", name, status)
		return 0
	}
	if gauge("rein_approvals_pending", "") != 1 || gauge("rein_runs", "waiting") != 1 {
		t.Errorf("pending approvals %v, waiting runs %v; want 1 and 1", gauge("rein_approvals_pending", ""), gauge("rein_runs", "waiting"))
	}
	if f := fams["rein_step_duration_seconds"]; f == nil || len(f.Metric) == 0 || f.Metric[0].GetHistogram().GetSampleCount() == 0 {
		t.Errorf("no step durations: %v", f)
	}
	if f := fams["rein_runs_settled_total"]; f == nil || f.Metric[0].GetCounter().GetValue() != 1 {
		t.Errorf("runs settled: %v", f)
	}
}

// A failed run is retried in place: same run id, its failed step runs
// again (and fails again here: the order does not exist).
func TestRetryFailedRun(t *testing.T) {
	e := newEnv(t, envOpts{})
	s := e.start("", map[string]any{"flow": "refund", "input": map[string]any{"order": "Z-9", "amount": 5, "reason": "x"}})
	if s.Status != "failed" {
		t.Fatalf("a refund of an unknown order is %s, want failed", s.Status)
	}
	r := e.do("POST", "/v1/runs/"+s.RunID+"/retry", "", nil)
	var got reinhttp.Started
	r.json(t, &got)
	if r.status != 200 || got.RunID != s.RunID || got.Status != "failed" {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	v := e.waitStatus("", s.RunID, "failed")
	for _, st := range v.Steps {
		if st.StepID == "lookup" && st.Attempt < 2 {
			t.Errorf("lookup after the retry: attempt %d, want a new one", st.Attempt)
		}
	}
	if r := e.do("POST", "/v1/runs/"+s.RunID+"/retry", "", `{"from":"nope"}`); r.status < 400 {
		t.Errorf("retry from an unknown step: %d %s", r.status, r.body)
	} else {
		r.problem(t)
	}
}
