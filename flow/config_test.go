package flow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/tool"
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

func TestConfigMCP(t *testing.T) {
	t.Parallel()
	cfg, err := flow.ParseConfig([]byte(`mcp:
  crm:
    command: [./crm-mcp, --readonly]
    pass_env: [CRM_TOKEN]
    timeout: 20s
    tools:
      find: {effect: read, idempotent: true}
      create:
        effect: write
        reversibility: compensatable
        compensate: {tool: crm.archive, args: {id: "{output.id}"}}
        resources: ["crm:customer/{output.id}"]
        tags: [user-facing]
      ping: {idempotent: true}
  search: {url: "https://search.example/mcp"}
`), "/p/rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crm, search := cfg.MCP["crm"], cfg.MCP["search"]
	if crm == nil || crm.Command[1] != "--readonly" || crm.Dir != "/p" || crm.PassEnv[0] != "CRM_TOKEN" || crm.Timeout != 20*time.Second ||
		crm.Tools["find"].Effect != "read" || !crm.Tools["find"].Idempotent || search == nil || search.URL != "https://search.example/mcp" {
		t.Errorf("MCP = %+v %+v", crm, search)
	}
	var spec tool.Spec
	crm.Tools["create"].ApplyTo(&spec)
	if spec.Effect != tool.EffectWrite || spec.Reversibility != tool.Compensatable || spec.Compensate == nil || spec.Compensate.Tool != "crm.archive" ||
		strings.Join(spec.Resources, ",") != "crm:customer/{output.id}" || strings.Join(spec.Tags, ",") != "user-facing" {
		t.Errorf("crm.create spec = %+v", spec)
	}
	if ping := crm.Tools["ping"]; ping.Effect != tool.EffectExternal || !ping.Idempotent {
		t.Errorf("a tool declared without effect: %+v, want external (as an undeclared one)", ping)
	}
	_, err = flow.ParseConfig([]byte(`mcp:
  a: {command: [x], url: "http://h/mcp"}
  b: {}
  c: {url: "ftp://h"}
  d: {command: [x], tools: {t: {effect: loud, undo: y}}}
  e.f: {command: [x]}
  g: {url: "http://h/mcp", pass_env: [X]}
  h:
    command: [x]
    tools:
      u: {effect: write, compensate: {tool: h.v, args: {id: "{input.id}"}}, resources: ["crm:{item}"], tags: ["no tags"], approval: required}
`), "rein.yaml")
	want := []string{
		"rein.yaml:2:3: mcp server a has both command: and url:: give one",
		"rein.yaml:3:3: mcp server b needs command: [program, args...] (a server on stdio) or url: (a streamable-HTTP endpoint)",
		`rein.yaml:4:12: mcp server c: url must be an http:// or https:// URL of a streamable-HTTP MCP endpoint, not "ftp://h"`,
		`rein.yaml:5:41: mcp server d tool t: effect must be none, read, write, external or destructive, not "loud"`,
		`rein.yaml:5:53: mcp server d tool t: undo must be a mapping like {tool: archive_customer`,
		`rein.yaml:11:7: mcp server h tool u: compensate: belongs to a tool with reversibility: compensatable`,
		`rein.yaml:11:62: mcp server h tool u compensate args/id: {input.id} is not known here`,
		`rein.yaml:11:94: mcp server h tool u: resource "crm:{item}": {item} is not known here`,
		`rein.yaml:11:111: mcp server h tool u: tag "no tags" must start with a letter`,
		`rein.yaml:11:123: unknown field "approval" in mcp server h tool u`,
		`rein.yaml:6:3: mcp server name "e.f" must be plain text without dots or spaces: its tools are called <server>.<tool>`,
		"rein.yaml:7:3: mcp server g: env: and pass_env: are for a command: server, not a url: one",
	}
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}
