package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const routeData = "testdata/route/"

type routeOut struct {
	Route, Source, Reason string
	Rule                  *struct {
		Index         int
		Kind, Pattern string
	}
	Error *struct{ Class, Message string }
}

func routeJSON(t *testing.T, args ...string) (int, routeOut, string) {
	t.Helper()
	code, out, stderr := cli(t, append(append([]string{"route"}, args...), "--output", "json")...)
	var res routeOut
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s\nstderr: %s", err, out, stderr)
	}
	return code, res, stderr
}

func TestRouteByRuleNeverCallsTheModel(t *testing.T) {
	t.Parallel()
	// never.yaml's only reply fails the command if the semantic router asks.
	routes, never := routeData+"routes.yaml", routeData+"never.yaml"
	tests := []struct {
		text, route, want string
		meta              []string
	}{
		{"weather: Tokyo", "weather", `weather (rule: prefix "weather:")`, nil},
		{"what is the forecast for Osaka", "weather", `weather (rule: regexp "(?i)\\bforecast\\b")`, nil},
		{"where is my invoice", "account", `account (rule: expr "text contains 'invoice'")`, nil},
		{"hello", "account", `account (rule: expr "metadata.channel == 'billing-desk'")`, []string{"--metadata", "channel=billing-desk"}},
	}
	for _, tt := range tests {
		args := append([]string{"route", tt.text, "--routes", routes, "--script", never}, tt.meta...)
		code, out, stderr := cli(t, args...)
		if code != exitOK || strings.TrimSpace(out) != tt.want {
			t.Errorf("%q: exit %d, stdout %q, want %q\n%s", tt.text, code, out, tt.want, stderr)
		}
		code, res, stderr := routeJSON(t, args[1:]...)
		if code != exitOK || res.Route != tt.route || res.Source != "rule" || res.Reason == "" || res.Rule == nil {
			t.Errorf("%q json: exit %d %+v\n%s", tt.text, code, res, stderr)
		}
	}
	// The script is live: a request no rule matches reaches it, and fails.
	code, res, _ := routeJSON(t, "rewrite this sentence", "--routes", routes, "--script", never)
	if code != exitRunFailed || res.Error == nil || !strings.Contains(res.Error.Message, "must not be called") {
		t.Fatalf("unmatched request: exit %d %+v", code, res)
	}
}

func TestRouteSemantic(t *testing.T) {
	t.Parallel()
	routes := routeData + "routes.yaml"
	code, out, stderr := cli(t, "route", "I think I was charged twice this month", "--routes", routes, "--script", routeData+"semantic.yaml")
	if code != exitOK || strings.TrimSpace(out) != "account (semantic: the customer reports a duplicate charge)" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, stderr)
	}
	code, res, stderr := routeJSON(t, "I think I was charged twice this month", "--routes", routes, "--script", routeData+"semantic.yaml")
	if code != exitOK || res.Route != "account" || res.Source != "semantic" || res.Reason != "the customer reports a duplicate charge" || res.Rule != nil {
		t.Fatalf("json: exit %d %+v\n%s", code, res, stderr)
	}

	// A route outside the set is rejected, after one corrective request.
	code, res, _ = routeJSON(t, "I think I was charged twice", "--routes", routes, "--script", routeData+"outside.yaml")
	if code != exitRunFailed || res.Route != "" || res.Error == nil || res.Error.Class != "format" ||
		!strings.Contains(res.Error.Message, "after 2 call(s)") || !strings.Contains(res.Error.Message, "'weather', 'account', 'general'") {
		t.Fatalf("outside the set: exit %d %+v", code, res)
	}
}

func TestRouteNoSemanticRouter(t *testing.T) {
	t.Parallel()
	code, _, stderr := cli(t, "route", "hello", "--routes", routeData+"rules_only.yaml")
	if code != exitRunFailed || !strings.Contains(stderr, `no rule of testdata/route/rules_only.yaml matched "hello" and there is no semantic router`) {
		t.Fatalf("exit %d %s", code, stderr)
	}
	if code, out, _ := cli(t, "route", "weather: Oslo", "--routes", routeData+"rules_only.yaml"); code != exitOK || !strings.HasPrefix(out, "weather (rule:") {
		t.Fatalf("rule match without a model: exit %d %s", code, out)
	}
	// routes.yaml names model: default, which nothing configures.
	code, _, stderr = cli(t, "route", "hello", "--routes", routeData+"routes.yaml")
	if code != exitUsage || !strings.Contains(stderr, `model "default" is not configured`) || !strings.Contains(stderr, "rein: answer it with --model NAME|provider/model, or offline with --script FILE") {
		t.Fatalf("unconfigured model: exit %d %s", code, stderr)
	}
}

func TestRouteBadRoutesFile(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"bad.yaml": {
			"testdata/route/bad.yaml:5:12: rules must be a list",
			`testdata/route/bad.yaml:7:5: unknown field "descripton"`,
			"rein: 2 problems in the routes file; nothing was routed",
		},
		"bad_rules.yaml": {
			"testdata/route/bad_rules.yaml:6:42: give exactly one of prefix, regexp or expr",
			"testdata/route/bad_rules.yaml:10:14: bad regexp",
			`testdata/route/bad_rules.yaml:11:27: rule selects "nowhere", which is not a route`,
			"rein: 3 problems in the routes file; nothing was routed",
		},
	}
	for file, wants := range tests {
		// never.yaml fails the command should anything be routed.
		code, out, stderr := cli(t, "route", "weather: Tokyo", "--routes", routeData+file, "--script", routeData+"never.yaml")
		if code != exitUsage || out != "" {
			t.Errorf("%s: exit %d, stdout %q", file, code, out)
		}
		for _, want := range wants {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", file, want, stderr)
			}
		}
	}
	if code, _, stderr := cli(t, "route", "hello", "--routes", routeData+"missing.yaml"); code != exitUsage || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("missing file: exit %d %s", code, stderr)
	}
	if code, _, _ := cli(t, "route", "hello", "--routes", routeData+"routes.yaml", "--output", "yaml"); code != exitUsage {
		t.Errorf("bad --output: exit %d", code)
	}
}

// TestRouteConfiguredModel routes through a rein.yaml models: entry, an
// OpenAI-compatible server (here a stand-in speaking the wire format).
func TestRouteConfiguredModel(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") || !strings.Contains(string(body), "charged twice") || !strings.Contains(string(body), `"model":"tiny"`) {
			http.Error(w, `{"error": {"message": "unexpected request"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1741569952,"model":"tiny",
			"choices":[{"index":0,"message":{"role":"assistant","content":"{\"route\":\"account\",\"reason\":\"a duplicate charge\"}"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":52,"completion_tokens":14,"total_tokens":66}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	routes, err := os.ReadFile(routeData + "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"routes.yaml": string(routes),
		"rein.yaml":   "models:\n  default: {provider: ollama, model: tiny, base_url: " + srv.URL + "/v1}\n  hosted: {provider: openai, model: gpt-4o-mini, api_key_env: REIN_TEST_ROUTE_UNSET_KEY}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// rein.yaml is found beside the routes file.
	code, res, stderr := routeJSON(t, "I was charged twice", "--routes", filepath.Join(dir, "routes.yaml"))
	if code != exitOK || res.Route != "account" || res.Source != "semantic" || res.Reason != "a duplicate charge" || hits.Load() != 1 {
		t.Fatalf("exit %d %+v, %d requests\n%s", code, res, hits.Load(), stderr)
	}
	// A rule match sends nothing.
	if code, res, _ = routeJSON(t, "weather: Tokyo", "--routes", filepath.Join(dir, "routes.yaml")); code != exitOK || res.Source != "rule" || hits.Load() != 1 {
		t.Fatalf("rule: exit %d %+v, %d requests", code, res, hits.Load())
	}
	// A hosted model without its key says which variable to set.
	code, _, stderr = cli(t, "route", "I was charged twice", "--routes", filepath.Join(dir, "routes.yaml"), "--model", "hosted")
	if code != exitUsage || !strings.Contains(stderr, "set the environment variable REIN_TEST_ROUTE_UNSET_KEY") {
		t.Fatalf("no key: exit %d %s", code, stderr)
	}
}
