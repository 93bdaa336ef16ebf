package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/anthropic"
	"github.com/reinhq/rein/model/openai"
	"github.com/reinhq/rein/model/provider"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParseRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref  string
		want provider.Spec
		err  string
	}{
		{ref: "openai/gpt-4o-mini", want: provider.Spec{Provider: "openai", Model: "gpt-4o-mini"}},
		{ref: "Anthropic/claude-sonnet-4-5", want: provider.Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}},
		{ref: "vllm/meta-llama/Llama-3.1-8B-Instruct", want: provider.Spec{Provider: "vllm", Model: "meta-llama/Llama-3.1-8B-Instruct"}},
		{ref: "ollama/llama3.2:3b", want: provider.Spec{Provider: "ollama", Model: "llama3.2:3b"}},
		{ref: "gpt-4o-mini", err: `model "gpt-4o-mini" is not provider/model (e.g. openai/gpt-4o-mini; providers: anthropic, deepseek, lmstudio, ollama, openai, vllm)`},
		{ref: "openai/", err: "is not provider/model"},
		{ref: "opneai/gpt-4o", err: `unknown provider "opneai" (known: anthropic, deepseek, lmstudio, ollama, openai, vllm)`},
	}
	for _, tt := range tests {
		got, err := provider.ParseRef(tt.ref)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseRef(%q) error %v, want %q", tt.ref, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", tt.ref, got, err, tt.want)
		}
	}
}

func TestOpenPresets(t *testing.T) {
	t.Parallel()
	getenv := env("OPENAI_API_KEY", "sk-o", "ANTHROPIC_API_KEY", "sk-a", "DEEPSEEK_API_KEY", "sk-d")
	for _, tt := range []struct {
		prov string
		want any
	}{
		{"openai", &openai.Model{}}, {"deepseek", &openai.Model{}}, {"ollama", &openai.Model{}},
		{"vllm", &openai.Model{}}, {"lmstudio", &openai.Model{}}, {"anthropic", &anthropic.Model{}},
	} {
		m, err := provider.Open(provider.Spec{Provider: tt.prov, Model: "m"}, getenv)
		if err != nil {
			t.Errorf("%s: %v", tt.prov, err)
			continue
		}
		switch tt.want.(type) {
		case *openai.Model:
			if _, ok := m.(*openai.Model); !ok {
				t.Errorf("%s: %T, want *openai.Model", tt.prov, m)
			}
		case *anthropic.Model:
			if _, ok := m.(*anthropic.Model); !ok {
				t.Errorf("%s: %T, want *anthropic.Model", tt.prov, m)
			}
		}
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec provider.Spec
		env  func(string) string
		want string
	}{
		{provider.Spec{Provider: "openai", Model: "gpt-4o-mini"}, env(), "openai/gpt-4o-mini needs an API key: set the environment variable OPENAI_API_KEY"},
		{provider.Spec{Provider: "deepseek", Model: "deepseek-chat"}, env("OPENAI_API_KEY", "x"), "set the environment variable DEEPSEEK_API_KEY"},
		{provider.Spec{Provider: "anthropic", Model: "claude", APIKeyEnv: "MY_KEY"}, env("ANTHROPIC_API_KEY", "x"), "set the environment variable MY_KEY"},
		{provider.Spec{Provider: "ollama", Model: "llama3.2", APIKeyEnv: "OLLAMA_KEY"}, env(), "set the environment variable OLLAMA_KEY"},
		{provider.Spec{Provider: "openai", Model: "m"}, env("OPENAI_API_KEY", "   "), "needs an API key"},
		{provider.Spec{Provider: "azure", Model: "m"}, env(), `unknown provider "azure" (known: anthropic, deepseek, lmstudio, ollama, openai, vllm)`},
		{provider.Spec{Model: "m"}, env(), "provider is missing"},
		{provider.Spec{Provider: "openai"}, env("OPENAI_API_KEY", "x"), "model is missing (e.g. model: gpt-4o-mini)"},
		{provider.Spec{Provider: "ollama", Model: "m", Structured: "strict"}, env(), `structured "strict" is not`},
		{provider.Spec{Provider: "ollama", Model: "m", BaseURL: "localhost:11434"}, env(), "not an http(s) URL"},
		{provider.Spec{Provider: "ollama", Model: "m", MaxTokens: -1}, env(), "negative"},
	}
	for _, tt := range tests {
		_, err := provider.Open(tt.spec, tt.env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%+v) error %v, want %q", tt.spec, err, tt.want)
		}
		// a missing key is a *KeyError naming the variable to set.
		var ke *provider.KeyError
		if isKey := strings.Contains(tt.want, "API key") || strings.Contains(tt.want, "set the environment variable"); isKey != errors.As(err, &ke) ||
			isKey && !strings.Contains(err.Error(), "set the environment variable "+ke.Env) {
			t.Errorf("Open(%+v) error %#v: a *KeyError %v", tt.spec, err, isKey)
		}
	}
	// Local servers need no key.
	if _, err := provider.Open(provider.Spec{Provider: "vllm", Model: "m"}, env()); err != nil {
		t.Errorf("vllm without a key: %v", err)
	}
}

func TestSpecFromYAMLAndJSON(t *testing.T) {
	t.Parallel()
	var fromYAML map[string]provider.Spec
	src := "default: {provider: openai, model: gpt-4o-mini, base_url: http://localhost:9/v1, api_key_env: MY_KEY, max_tokens: 512, timeout: 45s, structured: json_object}\nlocal: {provider: ollama, model: llama3.2, timeout: 90}\n"
	if err := yaml.Unmarshal([]byte(src), &fromYAML); err != nil {
		t.Fatal(err)
	}
	want := provider.Spec{Provider: "openai", Model: "gpt-4o-mini", BaseURL: "http://localhost:9/v1", APIKeyEnv: "MY_KEY", MaxTokens: 512, Timeout: provider.Duration(45 * time.Second), Structured: "json_object"}
	if fromYAML["default"] != want {
		t.Errorf("yaml: %+v\nwant   %+v", fromYAML["default"], want)
	}
	if fromYAML["local"].Timeout != provider.Duration(90*time.Second) {
		t.Errorf("yaml timeout: 90 = %v, want 90s", time.Duration(fromYAML["local"].Timeout))
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON provider.Spec
	if err := json.Unmarshal(b, &fromJSON); err != nil || fromJSON != want {
		t.Errorf("json round trip %s: %+v, %v", b, fromJSON, err)
	}
	if err := json.Unmarshal([]byte(`{"timeout": 2.5}`), &fromJSON); err != nil || time.Duration(fromJSON.Timeout) != 2500*time.Millisecond {
		t.Errorf("json timeout 2.5: %v, %v", time.Duration(fromJSON.Timeout), err)
	}
	if err := json.Unmarshal([]byte(`{"timeout": "soon"}`), &fromJSON); err == nil {
		t.Error(`timeout "soon" accepted`)
	}
}

// The key comes from the variable named, reaches the server, and a 401
// names the variable, not the key.
func TestOpenUsesTheKeyFromTheEnvironment(t *testing.T) {
	t.Parallel()
	const key = "sk-from-env-0123456789"
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + key + `","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
	}))
	defer srv.Close()
	m, err := provider.Open(provider.Spec{Provider: "openai", Model: "gpt-4o-mini", BaseURL: srv.URL, APIKeyEnv: "TEAM_OPENAI_KEY"}, env("TEAM_OPENAI_KEY", key))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Content: "hi"}}})
	if auth != "Bearer "+key {
		t.Errorf("Authorization %q, want the key from TEAM_OPENAI_KEY", auth)
	}
	if fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "TEAM_OPENAI_KEY") || strings.Contains(err.Error(), key) {
		t.Errorf("401: %v, want a business error naming TEAM_OPENAI_KEY without the key", err)
	}
}

// The presets' base URLs are the adapters' defaults, written out so that
// this package links no adapter.
func TestPresetBaseURLsAreTheAdapters(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"openai": openai.DefaultBaseURL, "anthropic": anthropic.DefaultBaseURL} {
		if p, _ := provider.Lookup(name); p.BaseURL != want {
			t.Errorf("preset %s: base URL %q, want the adapter's %q", name, p.BaseURL, want)
		}
	}
}

// OPENAI_BASE_URL and ANTHROPIC_BASE_URL send a spec without base_url to
// that server (a compatible server, a proxy); a spec's base_url wins, and
// a variable that is not a URL is named in the error.
func TestOpenReadsTheBaseURLVariables(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ prov, urlEnv, keyEnv string }{
		{"openai", "OPENAI_BASE_URL", "OPENAI_API_KEY"},
		{"anthropic", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"},
	} {
		var hits []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits = append(hits, r.URL.Path)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_, _ = w.Write([]byte(`{"error":{"message":"no","type":"authentication_error"}}`))
		}))
		defer srv.Close()
		getenv := env(tt.urlEnv, srv.URL+"/v1", tt.keyEnv, "sk-test-0123456789abcdef")
		m, err := provider.Open(provider.Spec{Provider: tt.prov, Model: "m"}, getenv)
		if err != nil {
			t.Fatalf("%s: %v", tt.prov, err)
		}
		_, _ = m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Content: "hi"}}})
		if len(hits) != 1 || !strings.HasPrefix(hits[0], "/v1/") {
			t.Errorf("%s: the server at %s got %v, want one call under /v1/", tt.prov, tt.urlEnv, hits)
		}

		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }))
		defer other.Close()
		hits = nil
		m, err = provider.Open(provider.Spec{Provider: tt.prov, Model: "m", BaseURL: other.URL}, getenv)
		if err != nil {
			t.Fatalf("%s: %v", tt.prov, err)
		}
		_, _ = m.Generate(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Content: "hi"}}})
		if len(hits) != 0 {
			t.Errorf("%s: base_url given, yet %s's server was called: %v", tt.prov, tt.urlEnv, hits)
		}

		_, err = provider.Open(provider.Spec{Provider: tt.prov, Model: "m"}, env(tt.urlEnv, "localhost:9", tt.keyEnv, "sk-test-0123456789abcdef"))
		if err == nil || !strings.Contains(err.Error(), tt.urlEnv) {
			t.Errorf("%s: %s=localhost:9 gives %v, want an error naming the variable", tt.prov, tt.urlEnv, err)
		}
	}
}
