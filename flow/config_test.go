package flow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
)

func TestConfigModels(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`models:
  default: {provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY, timeout: 20s}
  local: {provider: ollama, model: llama3.2, base_url: "http://127.0.0.1:11434/v1", structured: json_object, max_tokens: 512}
`), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Models["default"]
	if d == nil || d.Provider != "openai" || d.Model != "gpt-4o-mini" || d.APIKeyEnv != "OPENAI_API_KEY" || d.Timeout != 20*time.Second || d.Pos.Line != 2 {
		t.Fatalf("default = %+v", d)
	}
	if l := cfg.Models["local"]; l == nil || l.BaseURL != "http://127.0.0.1:11434/v1" || l.Structured != "json_object" || l.MaxTokens != 512 {
		t.Fatalf("local = %+v", l)
	}
}

func TestConfigModelsRejectsBadEntries(t *testing.T) {
	t.Parallel()
	_, err := flow.ParseConfig([]byte(`models:
  a: {model: x}
  b: {provider: openai, model: y, api_key_env: sk-live-123}
  c: {provider: openai, model: z, colour: red}
  d: {provider: openai, model: w, structured: xml}
`), "rein.yaml")
	if err == nil {
		t.Fatal("bad models: accepted")
	}
	for _, want := range []string{
		"rein.yaml:2:3: model a needs a provider:",
		"rein.yaml:3:48: model b: api_key_env names the environment variable",
		`rein.yaml:4:35: unknown field "colour"`,
		`rein.yaml:5:47: model d: structured must be json_schema, json_object or none, not "xml"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

func TestConfigSecretsAndPassEnv(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`secrets: [MAILER_LOGIN, smtp_cred]
tools:
  mail: {command: [./mail.sh], effect: external, pass_env: [MAILER_LOGIN, AWS_*]}
`), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Secrets; len(got) != 2 || got[0] != "MAILER_LOGIN" || got[1] != "smtp_cred" {
		t.Errorf("Secrets = %q", got)
	}
	if got := cfg.Tools["mail"].PassEnv; len(got) != 2 || got[1] != "AWS_*" {
		t.Errorf("PassEnv = %q", got)
	}
	_, err = flow.ParseConfig([]byte(`secrets: [AWS_*, "1BAD"]
tools:
  mail: {command: [./mail.sh], effect: external, pass_env: ["A=B", OK_*]}
`), "rein.yaml")
	if err == nil {
		t.Fatal("bad names accepted")
	}
	for _, want := range []string{
		`rein.yaml:1:11: secrets: "AWS_*" is not an environment variable name`,
		`rein.yaml:1:18: secrets: "1BAD" is not an environment variable name`,
		`rein.yaml:3:61: tool mail: pass_env: "A=B" is not an environment variable name (letters, digits and _, not starting with a digit, or a prefix ending in * like AWS_*)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
