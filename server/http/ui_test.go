package http_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hostile is a run input a page must show as text, never as markup.
var hostile = map[string]any{"flow": "refund", "input": map[string]any{"order": "A-1042", "amount": 240, "reason": `<script>alert("x")</script>`}}

// browser is a client with a cookie jar, as a browser keeps a session.
type browser struct {
	e *env
	c *http.Client
}

func (e *env) browser() *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	c := *e.ts.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{e: e, c: &c}
}

// get fetches a page; header pairs are set on the request.
func (b *browser) get(path string, headers ...string) reply {
	return b.send("GET", path, nil, headers...)
}

// post posts a form.
func (b *browser) post(path string, form url.Values, headers ...string) reply {
	return b.send("POST", path, form, headers...)
}

func (b *browser) send(method, path string, form url.Values, headers ...string) reply {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(b.e.t.Context(), method, b.e.ts.URL+path, body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	return reply{status: res.StatusCode, header: res.Header, body: data}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of a page's forms.
func csrf(t *testing.T, r reply) string {
	t.Helper()
	m := csrfField.FindSubmatch(r.body)
	if m == nil {
		t.Fatalf("the page has no CSRF field:\n%s", r.body)
	}
	return string(m[1])
}

// page checks an answer is an HTML page with the UI's security headers.
func page(t *testing.T, what string, r reply, status int) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d, want %d\n%s", what, r.status, status, r.body)
	}
	h := r.header
	if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %s", what, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("%s: CSP %q allows inline code", what, csp)
	}
	if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("%s: headers %v", what, h)
	}
	body := string(r.body)
	if strings.Contains(body, `<script>alert`) || strings.Contains(body, " style=") || strings.Contains(body, "<style") {
		t.Errorf("%s: the page holds a hostile script or an inline style\n%s", what, body)
	}
	if m := regexp.MustCompile(`<script[^>]*>[^<]+</script>`).FindString(body); m != "" {
		t.Errorf("%s: an inline script %s", what, m)
	}
	return body
}

// Every page renders for the local user of a server without tokens, with
// the run's hostile input escaped, and the assets are served embedded.
func TestUIPages(t *testing.T) {
	e := newEnv(t, envOpts{})
	s := e.start("", hostile)
	b := e.browser()
	body := page(t, "runs", b.get("/"), 200)
	for _, want := range []string{"/runs/" + s.RunID, "&lt;script&gt;", `hx-get="/runs/rows?"`, `<label for="f-status">`} {
		if !strings.Contains(body, want) {
			t.Errorf("the runs list lacks %s\n%s", want, body)
		}
	}
	if body := page(t, "filtered rows", b.get("/runs/rows?status=succeeded"), 200); strings.Contains(body, s.RunID) {
		t.Errorf("a waiting run listed under status succeeded")
	}
	if body := page(t, "search", b.get("/?q=nothing-like-this"), 200); strings.Contains(body, "/runs/"+s.RunID) {
		t.Errorf("a search for another text lists the run")
	}
	if body := page(t, "search", b.get("/?q=A-1042"), 200); !strings.Contains(body, "/runs/"+s.RunID) {
		t.Errorf("a search for the order does not list the run")
	}
	page(t, "bad status", b.get("/?status=bogus"), 400)
	body = page(t, "run", b.get("/runs/"+s.RunID), 200)
	for _, want := range []string{`<svg`, `class="node k-step st-succeeded" id="step-lookup"`, `class="node k-step st-waiting" id="step-review"`,
		`sse-connect="/runs/` + s.RunID + `/live?seq=`, `action="/runs/` + s.RunID + `/decide"`, "&lt;script&gt;", `<td>lookup</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %s\n%s", want, body)
		}
	}
	body = page(t, "approvals", b.get("/approvals"), 200)
	for _, want := range []string{`value="review"`, `value="approve"`, `value="reject"`, "&lt;script&gt;", `<textarea`} {
		if !strings.Contains(body, want) {
			t.Errorf("the inbox lacks %s\n%s", want, body)
		}
	}
	body = page(t, "effects", b.get("/runs/"+s.RunID+"/effects?premise=lookup"), 200)
	for _, want := range []string{`<td>read · idempotent</td>`, `lookup_order`, `Impact of a premise`, `action="/runs/` + s.RunID + `/remediate"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the effects page lacks %s\n%s", want, body)
		}
	}
	page(t, "flows", b.get("/flows"), 200)
	if body := page(t, "flow", b.get("/flows/refund"), 200); !strings.Contains(body, `id="step-review"`) {
		t.Errorf("the flow page has no graph\n%s", body)
	}
	page(t, "no flow", b.get("/flows/nope"), 404)
	page(t, "no run", b.get("/runs/nope"), 404)
	page(t, "no page", b.get("/nope"), 404)
	for _, a := range []string{"/assets/htmx.min.js", "/assets/htmx-ext-sse.min.js", "/assets/rein.css"} {
		if r := b.get(a); r.status != 200 || len(r.body) < 100 {
			t.Errorf("%s: %d, %d bytes", a, r.status, len(r.body))
		}
	}
	// the API keeps its own 404
	if r := e.do("GET", "/v1/nope", "", nil); r.status != 404 {
		t.Errorf("/v1/nope: %d", r.status)
	} else {
		r.problem(t)
	}
}

// A decision in the inbox needs the form's CSRF token and a same-origin
// post, then continues the run as the API's decision does.
func TestUIDecideCSRF(t *testing.T) {
	e := newEnv(t, envOpts{})
	s := e.start("", bigRefund)
	b := e.browser()
	token := csrf(t, b.get("/approvals"))
	form := url.Values{"step": {"review"}, "decision": {"approve"}, "comment": {"photo checked"}, "back": {"/runs/" + s.RunID}}
	page(t, "no CSRF token", b.post("/runs/"+s.RunID+"/decide", form), 403)
	form.Set("csrf", token)
	page(t, "cross-origin", b.post("/runs/"+s.RunID+"/decide", form, "Sec-Fetch-Site", "cross-site"), 403)
	page(t, "another origin", b.post("/runs/"+s.RunID+"/decide", form, "Origin", "https://evil.example"), 403)
	form.Set("back", "//evil.example/x")
	r := b.post("/runs/"+s.RunID+"/decide", form, "Sec-Fetch-Site", "same-origin")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/approvals" {
		t.Fatalf("decide: %d Location %q\n%s", r.status, r.header.Get("Location"), r.body)
	}
	v := e.waitStatus("", s.RunID, "succeeded")
	if a := v.Approvals[0]; a.Comment != "photo checked" || a.DecidedBy != "local" {
		t.Errorf("the decision is recorded as %+v", a)
	}
}

// With tokens, the UI asks to log in, keeps a session cookie (HttpOnly,
// SameSite=Strict), shows a tenant only its runs (another's is a 404),
// and checks the scopes of decide and remediate.
func TestUILoginTenantsScopes(t *testing.T) {
	e := newEnv(t, envOpts{tokens: true})
	alice := e.token("alice", "acme", "run", "approve")
	rita := e.token("rita", "acme", "read")
	gus := e.token("gus", "globex", "run", "approve")
	s := e.start(alice, bigRefund)

	b := e.browser()
	if r := b.get("/"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
		t.Fatalf("no session: %d %q", r.status, r.header.Get("Location"))
	}
	page(t, "login page", b.get("/login"), 200)
	page(t, "bad token", b.post("/login", url.Values{"token": {"rein_forged"}}), 401)
	login := func(b *browser, token string) {
		t.Helper()
		r := b.post("/login", url.Values{"token": {token}})
		if r.status != http.StatusSeeOther {
			t.Fatalf("login: %d\n%s", r.status, r.body)
		}
		ck := r.header.Get("Set-Cookie")
		for _, want := range []string{"rein_session=", "HttpOnly", "SameSite=Strict", "Path=/"} {
			if !strings.Contains(ck, want) {
				t.Errorf("cookie %q lacks %s", ck, want)
			}
		}
		if strings.Contains(ck, token) {
			t.Errorf("the cookie holds the token: %q", ck)
		}
	}
	login(b, gus)
	if body := page(t, "globex runs", b.get("/"), 200); strings.Contains(body, s.RunID) {
		t.Errorf("globex lists acme's run")
	}
	for _, p := range []string{"/runs/" + s.RunID, "/runs/" + s.RunID + "/effects", "/runs/" + s.RunID + "/live"} {
		page(t, "globex "+p, b.get(p), 404)
	}
	if body := page(t, "globex inbox", b.get("/approvals"), 200); strings.Contains(body, s.RunID) {
		t.Errorf("globex's inbox shows acme's approval")
	}
	gtoken := csrf(t, b.get("/approvals"))
	page(t, "globex decides acme's run", b.post("/runs/"+s.RunID+"/decide", url.Values{"csrf": {gtoken}, "step": {"review"}, "decision": {"approve"}}), 404)

	rb := e.browser()
	login(rb, rita)
	body := page(t, "rita's inbox", rb.get("/approvals"), 200)
	if !strings.Contains(body, s.RunID) || strings.Contains(body, `value="approve"`) {
		t.Errorf("a read token's inbox: the approval without its form, got\n%s", body)
	}
	if body := page(t, "rita's effects", rb.get("/runs/"+s.RunID+"/effects?premise=lookup"), 200); strings.Contains(body, `/remediate"`) {
		t.Errorf("a read token sees the remediate button")
	}
	rtoken := csrf(t, rb.get("/approvals"))
	page(t, "read cannot decide", rb.post("/runs/"+s.RunID+"/decide", url.Values{"csrf": {rtoken}, "step": {"review"}, "decision": {"approve"}}), 403)
	page(t, "read cannot remediate", rb.post("/runs/"+s.RunID+"/remediate", url.Values{"csrf": {rtoken}, "premise": {"lookup"}}), 403)

	ab := e.browser()
	login(ab, alice)
	atoken := csrf(t, ab.get("/approvals"))
	if atoken == rtoken || atoken == gtoken {
		t.Errorf("two sessions share a CSRF token")
	}
	page(t, "another session's CSRF token", ab.post("/runs/"+s.RunID+"/decide", url.Values{"csrf": {rtoken}, "step": {"review"}, "decision": {"approve"}}), 403)
	if r := ab.post("/runs/"+s.RunID+"/decide", url.Values{"csrf": {atoken}, "step": {"review"}, "decision": {"approve"}, "back": {"/approvals"}}); r.status != http.StatusSeeOther {
		t.Fatalf("alice decides: %d\n%s", r.status, r.body)
	}
	if v := e.waitStatus(alice, s.RunID, "succeeded"); v.Approvals[0].DecidedBy != "alice" {
		t.Errorf("decided by %q", v.Approvals[0].DecidedBy)
	}
	if r := ab.post("/logout", url.Values{"csrf": {atoken}}); r.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", r.status)
	}
	if r := ab.get("/"); r.status != http.StatusSeeOther {
		t.Errorf("after logout: %d", r.status)
	}
	if _, err := e.tokens.Revoke("rita"); err != nil {
		t.Fatal(err)
	}
	if r := rb.get("/"); r.status != http.StatusSeeOther {
		t.Errorf("a revoked token's session: %d", r.status)
	}
}

// The run page's stream redraws the live part when the journal grows and
// ends with the run: the graph's node turns from waiting to succeeded.
func TestUILive(t *testing.T) {
	e := newEnv(t, envOpts{})
	s := e.start("", bigRefund)
	req, err := http.NewRequestWithContext(t.Context(), "GET", e.ts.URL+"/runs/"+s.RunID+"/live?seq=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	evs := make(chan sseEvent, 64)
	go readSSE(res, evs)
	first := <-evs
	if first.kind != "run" || !strings.Contains(first.data, `st-waiting" id="step-review"`) {
		t.Fatalf("first event %s: %.300s", first.kind, first.data)
	}
	if r := e.do("POST", "/v1/runs/"+s.RunID+"/decisions", "", map[string]any{"step": "review", "decision": "approve"}); r.status != 200 {
		t.Fatalf("decide: %d %s", r.status, r.body)
	}
	var last sseEvent
	var kinds []string
	for ev := range evs {
		kinds = append(kinds, ev.kind)
		if ev.kind == "run" {
			last = ev
		}
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != "end" || !strings.Contains(last.data, `st-succeeded" id="step-review"`) {
		t.Errorf("kinds %v; last drawing %.400s", kinds, last.data)
	}
}

// A run's timeline prices each attempt's model calls by the rein.yaml
// price table: 100 tokens in at 3 and 50 out at 15 a million is 0.00105.
func TestUIRunShowsCost(t *testing.T) {
	e := newEnv(t, envOpts{dirs: []string{"testdata/budget"}})
	s := e.start("", map[string]any{"flow": "summarise", "input": map[string]any{"text": "a long text"}})
	if s.Status != "succeeded" {
		t.Fatalf("run %s", s.Status)
	}
	body := page(t, "priced run", e.browser().get("/runs/"+s.RunID), 200)
	for _, want := range []string{"<th scope=\"col\">Cost</th>", "<td>100 / 50</td><td>0.00105 USD</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %s\n%s", want, body)
		}
	}
}

// An agent's run page shows its transcript: each turn, its tool calls
// with their arguments and observations; the waiting call is in the inbox
// with the provenance of its arguments.
func TestUIAgentRun(t *testing.T) {
	e := newEnv(t, envOpts{dirs: []string{"../../examples/support-agent"}})
	s := e.start("", map[string]any{"agent": "support", "task": "I was charged twice for order 1042 <b>now</b>"})
	b := e.browser()
	body := page(t, "agent run", b.get("/runs/"+s.RunID), 200)
	for _, want := range []string{"Transcript of agent", "lookup_order", "list_charges", "issue_refund", `id="stream"`, "&lt;b&gt;now"} {
		if !strings.Contains(body, want) {
			t.Errorf("the agent's page lacks %s\n%s", want, body)
		}
	}
	body = page(t, "agent inbox", b.get("/approvals"), 200)
	for _, want := range []string{"issue_refund", "ch_2", "Provenance"} {
		if !strings.Contains(body, want) {
			t.Errorf("the inbox lacks %s\n%s", want, body)
		}
	}
}

// A for_each step shows its fan-out in the graph; the effects view shows
// each call's resources and compensation; a remediation from the effects
// view takes the calls that depend on a failed premise back.
func TestUIFanOutEffectsRemediate(t *testing.T) {
	// a copy: the example's fake CRM writes its state beside its flow
	dir := filepath.Join(t.TempDir(), "crm-onboarding")
	if err := os.CopyFS(dir, os.DirFS("../../examples/crm-onboarding")); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{dirs: []string{dir}})
	s := e.start("", map[string]any{"flow": "crm-onboarding", "input": map[string]any{
		"name": "Ada Lovelace", "email": "ada@example.com", "signup": "London, UK",
		"items": []string{"starter-kit", "welcome-pack", "onboarding-call"}, "note": strings.Repeat("long text ", 100)}})
	b := e.browser()
	body := page(t, "crm run", b.get("/runs/"+s.RunID), 200)
	for _, want := range []string{`id="step-link"`, "fan-out: 3 items", "<details><summary>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run page lacks %s\n%s", want, body)
		}
	}
	body = page(t, "crm effects", b.get("/runs/"+s.RunID+"/effects?premise=infer_region"), 200)
	for _, want := range []string{"link_item", "create_customer", "writes ", `action="/runs/` + s.RunID + `/remediate"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the effects page lacks %s\n%s", want, body)
		}
	}
	r := b.post("/runs/"+s.RunID+"/remediate", url.Values{"csrf": {csrf(t, b.get("/approvals"))}, "premise": {"infer_region"}, "reason": {"wrong region"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("remediate: %d\n%s", r.status, r.body)
	}
	if body := page(t, "after remediation", b.get("/runs/"+s.RunID+"/effects"), 200); !strings.Contains(body, "Remediations") {
		t.Errorf("the effects page shows no remediation\n%s", body)
	}
}
