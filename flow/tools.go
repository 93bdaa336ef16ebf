package flow

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/reinhq/rein/internal/yamlnode"
	"github.com/reinhq/rein/tool"
)

var toolFields = []string{"command", "description", "effect", "reversibility", "idempotent", "timeout",
	"input_schema", "output_schema", "env", "pass_env", "max_output_bytes", "undo", "compensate", "resources", "tags", "verifies", "check", "premise"}

// ToolDecl is an exec tool declared in a flow's tools: or in a rein.yaml.
// The application turns it into a tool.Tool (package tool/exec); the flow
// package only reads it.
type ToolDecl struct {
	Name        string
	Description string
	// Command is the program and its arguments. A relative program path
	// ("./tools/x.sh") resolves against Dir; a bare name uses PATH.
	Command []string
	Dir     string
	Env     map[string]string
	// PassEnv names the variables of rein's environment the program gets
	// besides the base set (PATH, HOME, locale, …); NAME_* passes a prefix.
	PassEnv []string
	// Timeout bounds one call; a declaration without timeout: gets the
	// defaults (Defaults.Timeout, else DefaultToolTimeout).
	Timeout      time.Duration
	MaxOutput    int64
	InputSchema  *Schema
	OutputSchema *Schema
	// Check is the program (and its arguments) that asks whether a call
	// took effect, for a resume that finds a call in doubt (check:); nil
	// for none. It resolves like Command.
	Check []string
	// Premise, when set, is checked on the output of every call of the
	// tool, wherever it is called (tool.Spec.Premise): its check sees
	// output and args.
	Premise *Premise
	// EffectDecl is what the tool does: effect, reversibility, idempotent,
	// undo, compensate, resources, tags.
	EffectDecl
	// File and Pos locate the declaration; CommandPos locates the
	// program, the command's first element.
	File       string
	Pos        Pos
	CommandPos Pos
}

// Spec returns the tool.Spec the declaration describes.
func (t *ToolDecl) Spec() tool.Spec {
	s := tool.Spec{Name: t.Name, Description: t.Description}
	t.ApplyTo(&s)
	if t.InputSchema != nil {
		s.InputSchema = t.InputSchema.JSON()
	}
	if t.OutputSchema != nil {
		s.OutputSchema = t.OutputSchema.JSON()
	}
	s.Premise = t.Premise.ToolPremise()
	return s
}

// Config is a rein.yaml: what a folder of flows shares (exec tools today;
// model providers arrive with their issue).
type Config struct {
	File  string
	Tools map[string]*ToolDecl
	// Defaults are rein.yaml defaults: (retries, timeout) for the steps of
	// the flows loaded with it (Options.Defaults) and its exec tools; nil
	// when it has none.
	Defaults *Defaults
	// Models are the configured model providers by name (rein.yaml models:).
	Models map[string]*ModelDecl
	// MCP are the external MCP servers by name (rein.yaml mcp:).
	MCP map[string]*MCPDecl
	// Secrets names environment variables whose values are secrets even
	// though their names do not say so (rein.yaml secrets:): they are
	// hidden wherever rein stores or prints a string (package redact).
	Secrets []string
	// Adapters are the exec adapters of source steps (rein.yaml
	// adapters:), declared like exec tools: {command, input_schema?,
	// output_schema?, ...}. An adapter reads an object of the step's
	// upstream outputs keyed by step id on stdin and writes the step's
	// output on stdout (package bridge runs them).
	Adapters map[string]*ToolDecl
	// Policy is rein.yaml policy:, the policy gate's rules; nil when it
	// has none (every call is allowed).
	Policy *PolicyDecl
	// Risk and Review are rein.yaml risk: and review: (flow.RiskDecl,
	// flow.ReviewDecl), for every flow that has none of its own; nil when
	// it has none.
	Risk   *RiskDecl
	Review *ReviewDecl
	// Encryption is rein.yaml encryption:, the key that seals payloads
	// holding a secret at rest; nil when it has none (they are redacted).
	Encryption *EncryptionDecl
	// Budgets is rein.yaml budgets:, the tenants' daily limits on their
	// model calls (priced by Models' price:); nil when it has none.
	Budgets *BudgetsDecl
}

// ModelDecl is one entry of rein.yaml models:, e.g.
//
//	models:
//	  default: {provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}
//
// API keys are never written in the file: APIKeyEnv names the variable
// that holds one.
type ModelDecl struct {
	Name       string
	Provider   string
	Model      string
	BaseURL    string
	APIKeyEnv  string
	MaxTokens  int
	Timeout    time.Duration
	Structured string
	// Price is what a million tokens cost (price:); nil: unpriced, its
	// calls count tokens but no cost.
	Price *PriceDecl
	File  string
	Pos   Pos
}

var modelFields = []string{"provider", "model", "base_url", "api_key_env", "max_tokens", "timeout", "structured", "price"}

// LoadConfig reads a rein.yaml. The error is an *Error with located problems,
// or an I/O error.
func LoadConfig(path string) (*Config, error) {
	cfg, _, err := LoadConfigFiles(path)
	return cfg, err
}

// LoadConfigFiles is LoadConfig that also returns every file the parse
// tried to read, by path, with the contents it read: the rein.yaml at path
// and the schema files it names (nil for a place a schema was looked for
// and not found; a file read is never nil). A caller that keeps the Config
// (it is not changed once parsed) can tell whether it still holds by
// reading them again.
func LoadConfigFiles(path string) (*Config, map[string][]byte, error) {
	files := map[string][]byte{}
	read := func(p string) ([]byte, error) {
		b, err := ReadConfigFile(p)
		if err == nil && b == nil {
			b = []byte{}
		}
		if err == nil {
			files[p] = b
		} else {
			files[p] = nil
		}
		return b, err
	}
	data, err := read(path)
	if err != nil {
		return nil, nil, fmt.Errorf("load config: %w", err)
	}
	cfg, err := parseConfig(data, path, read)
	return cfg, files, err
}

// ReadConfigFile reads a file a rein.yaml parse reads (the rein.yaml, a
// schema file it names), at most MaxFileBytes.
func ReadConfigFile(path string) ([]byte, error) { return yamlnode.ReadFile(path, MaxFileBytes) }

// ParseConfig parses rein.yaml text; relative tool commands resolve against
// the folder of filename.
func ParseConfig(data []byte, filename string) (*Config, error) {
	return parseConfig(data, filename, ReadConfigFile)
}

func parseConfig(data []byte, filename string, read func(path string) ([]byte, error)) (*Config, error) {
	d := &decoder{diags: diagnostics{file: filename}, flow: &Flow{},
		schemas: &schemaSet{dir: filepath.Dir(filename), byName: map[string]*Schema{}, files: map[string]*Schema{}, read: read}}
	cfg := &Config{File: filename, Tools: map[string]*ToolDecl{}}
	file, err := yamlnode.Parse(data, yamlnode.Limits{What: "rein.yaml", MaxBytes: MaxFileBytes})
	if err != nil {
		d.syntaxError(err)
		return nil, d.result()
	}
	if len(file.Docs) == 0 || file.Docs[0].Body == nil {
		return cfg, nil
	}
	fields, ok := fieldsOf(file.Docs[0].Body)
	if !ok {
		d.diags.add(posOf(file.Docs[0].Body), "", "rein.yaml must be a mapping, not %s", yamlnode.Kind(file.Docs[0].Body))
		return nil, d.result()
	}
	for _, f := range fields {
		switch f.key {
		case "tools":
			cfg.Tools = d.decodeTools(f, filepath.Dir(filename))
		case "models":
			cfg.Models = d.decodeModels(f)
		case "defaults":
			cfg.Defaults = d.decodeDefaults(f)
		case "secrets":
			cfg.Secrets = d.envNames(f, "secrets", false)
		case "mcp":
			cfg.MCP = d.decodeMCP(f, filepath.Dir(filename))
		case "adapters":
			cfg.Adapters = d.decodeAdapters(f, filepath.Dir(filename))
		case "policy":
			cfg.Policy = d.decodePolicy(f)
		case "risk":
			cfg.Risk = d.decodeRisk(f)
		case "review":
			cfg.Review = d.decodeReview(f)
		case "encryption":
			cfg.Encryption = d.decodeEncryption(f, filepath.Dir(filename))
		case "budgets":
			cfg.Budgets = d.decodeTenantBudgets(f)
		default:
			d.unknownField(f, "", "rein.yaml", []string{"tools", "models", "defaults", "secrets", "mcp", "adapters", "policy", "risk", "review", "encryption", "budgets"})
		}
	}
	d.checkCurrencies(cfg)
	if err := d.result(); err != nil {
		return nil, err
	}
	for _, t := range cfg.Tools {
		t.applyDefaults(cfg.Defaults)
	}
	for _, t := range cfg.Adapters {
		t.applyDefaults(cfg.Defaults)
	}
	return cfg, nil
}

func (d *decoder) decodeModels(fl field) map[string]*ModelDecl {
	out := map[string]*ModelDecl{}
	entries, ok := fieldsOf(fl.value)
	if !ok {
		if !isNull(fl.value) {
			d.diags.add(posOf(fl.value), "", "models must map model names to {provider, model, ...}, not %s", yamlnode.Kind(fl.value))
		}
		return out
	}
	for _, e := range entries {
		where := "model " + e.key
		if msg := yamlnode.NameProblem(e.key); msg != "" {
			d.diags.add(e.keyPos, "", "model name %q %s: write plain text", e.key, msg)
			continue
		}
		fields, ok := fieldsOf(e.value)
		if !ok {
			d.diags.add(posOf(e.value), "", "%s must be a mapping like {provider: openai, model: gpt-4o-mini}, not %s", where, yamlnode.Kind(e.value))
			continue
		}
		m := &ModelDecl{Name: e.key, File: d.diags.file, Pos: e.keyPos}
		for _, f := range fields {
			switch f.key {
			case "provider":
				m.Provider, _ = d.str(f, "")
			case "model":
				m.Model, _ = d.str(f, "")
			case "base_url":
				m.BaseURL, _ = d.str(f, "")
			case "api_key_env":
				m.APIKeyEnv, _ = d.str(f, "")
				if strings.HasPrefix(m.APIKeyEnv, "sk-") || strings.Contains(m.APIKeyEnv, " ") {
					d.diags.add(posOf(f.value), "", "%s: api_key_env names the environment variable holding the key (like OPENAI_API_KEY); never write the key itself in rein.yaml", where)
				}
			case "max_tokens":
				if n, ok := d.integer(f, ""); ok {
					if n < 1 {
						d.diags.add(posOf(f.value), "", "%s: max_tokens must be positive", where)
					}
					m.MaxTokens = n
				}
			case "timeout":
				m.Timeout, _ = d.duration(f, "")
			case "price":
				m.Price = d.decodePrice(f, where)
			case "structured":
				if v, ok := d.str(f, ""); ok {
					switch v {
					case "json_schema", "json_object", "none":
						m.Structured = v
					default:
						d.diags.add(posOf(f.value), "", "%s: structured must be json_schema, json_object or none, not %q", where, v)
					}
				}
			default:
				d.unknownField(f, "", where, modelFields)
			}
		}
		if m.Provider == "" {
			d.diags.add(e.keyPos, "", "%s needs a provider: (openai, anthropic, deepseek, ollama, vllm or lmstudio)", where)
		}
		if m.Model == "" {
			d.diags.add(e.keyPos, "", "%s needs a model: (the provider's model name, like gpt-4o-mini)", where)
		}
		out[e.key] = m
	}
	return out
}

func (d *decoder) decodeTools(fl field, dir string) map[string]*ToolDecl {
	return d.decodeToolMap(fl, dir, "tools must map tool names to declarations", idPattern,
		"tool name %q must start with a letter or _ and hold only letters, digits, _ and -")
}

// adapterPattern is the form of an adapter name: a tool name that may
// also hold dots (material-assigner.v2).
var adapterPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// decodeAdapters reads rein.yaml adapters:, each declared as an exec tool.
func (d *decoder) decodeAdapters(fl field, dir string) map[string]*ToolDecl {
	return d.decodeToolMap(fl, dir, "adapters must map adapter names to {command, input_schema?, output_schema?}", adapterPattern,
		"adapter name %q must start with a letter or _ and hold only letters, digits, _, - and .")
}

// decodeToolMap reads a mapping of names to exec tool declarations (tools:,
// adapters:): what says what the mapping must be, a name must match name
// (badName the message when it does not, with the name for %q).
func (d *decoder) decodeToolMap(fl field, dir, what string, name *regexp.Regexp, badName string) map[string]*ToolDecl {
	out := map[string]*ToolDecl{}
	entries, ok := fieldsOf(fl.value)
	if !ok {
		if !isNull(fl.value) {
			d.diags.add(posOf(fl.value), "", "%s, not %s", what, yamlnode.Kind(fl.value))
		}
		return out
	}
	for _, e := range entries {
		if !name.MatchString(e.key) {
			d.diags.add(e.keyPos, "", badName, e.key)
			continue
		}
		if t := d.decodeTool(e, dir); t != nil {
			out[e.key] = t
		}
	}
	return out
}

func (d *decoder) decodeTool(e field, dir string) *ToolDecl {
	fields, ok := fieldsOf(e.value)
	if !ok {
		d.diags.add(posOf(e.value), "", "tool %s must be a mapping with command:, not %s", e.key, yamlnode.Kind(e.value))
		return nil
	}
	t := &ToolDecl{Name: e.key, Dir: dir, File: d.diags.file, Pos: e.keyPos}
	where := "tool " + e.key
	for _, f := range fields {
		switch f.key {
		case "command":
			t.Command, t.CommandPos = d.command(f, where), posOf(f.value)
			if seq, ok := f.value.(*ast.SequenceNode); ok && len(seq.Values) > 0 {
				t.CommandPos = posOf(seq.Values[0])
			}
		case "check":
			t.Check = d.command(f, where+" check")
		case "premise":
			t.Premise = d.decodeToolPremise(f, where)
		case "description":
			t.Description, _ = d.str(f, "")
		case "timeout":
			if v, ok := d.duration(f, ""); ok {
				if v <= 0 {
					d.diags.add(posOf(f.value), "", "%s: timeout must be positive", where)
				}
				t.Timeout = v
			}
		case "max_output_bytes":
			if n, ok := d.integer(f, ""); ok {
				if n < 1 {
					d.diags.add(posOf(f.value), "", "%s: max_output_bytes must be positive", where)
				}
				t.MaxOutput = int64(n)
			}
		case "input_schema", "output_schema":
			s := d.schemaField(f, where+" "+f.key, "")
			if f.key == "input_schema" {
				t.InputSchema = s
			} else {
				t.OutputSchema = s
			}
		case "env":
			t.Env = d.env(f, where)
		case "pass_env":
			t.PassEnv = d.envNames(f, where+": pass_env", true)
		case "approval":
			if !d.agentTool {
				d.unknownField(f, "", where, toolFields)
			}
		default:
			if !d.decodeEffect(&t.EffectDecl, f, where) {
				d.unknownField(f, "", where, toolFields)
			}
		}
	}
	if _, ok := fieldByKey(fields, "effect"); !ok {
		d.diags.add(e.keyPos, "", "%s needs effect: (none, read, write, external or destructive): an exec tool can do anything, so it must say what it does", where)
	}
	d.checkEffect(&t.EffectDecl, e.keyPos, where)
	if t.Command == nil {
		d.diags.add(e.keyPos, "", "%s needs command: [program, args...]", where)
		return nil
	}
	return t
}

func (d *decoder) command(f field, where string) []string {
	if s, ok := f.value.(*ast.StringNode); ok {
		// A single string is a program without arguments; no shell splitting.
		if strings.TrimSpace(s.Value) == "" {
			d.diags.add(posOf(f.value), "", "%s: command is empty", where)
			return nil
		}
		return []string{s.Value}
	}
	list, _, ok := d.strList(f, "")
	if !ok {
		return nil
	}
	if len(list) == 0 || list[0] == "" {
		d.diags.add(posOf(f.value), "", "%s: command is empty", where)
		return nil
	}
	return list
}

func (d *decoder) env(f field, where string) map[string]string {
	fields, ok := fieldsOf(f.value)
	if !ok {
		d.diags.add(posOf(f.value), "", "%s: env must map names to strings", where)
		return nil
	}
	out := make(map[string]string, len(fields))
	for _, e := range fields {
		if v, ok := d.str(e, ""); ok {
			out[e.key] = v
		}
	}
	return out
}

// envNames reads a list of environment variable names; with glob a name
// may end in * (a prefix).
func (d *decoder) envNames(f field, where string, glob bool) []string {
	list, pos, ok := d.strList(f, "")
	if !ok {
		return nil
	}
	for i, n := range list {
		if !envName.MatchString(n) || !glob && strings.HasSuffix(n, "*") {
			hint := ""
			if glob {
				hint = ", or a prefix ending in * like AWS_*"
			}
			d.diags.add(pos[i], "", "%s: %q is not an environment variable name (letters, digits and _, not starting with a digit%s)", where, n, hint)
		}
	}
	return list
}

// envName is a variable name, or a prefix ending in *.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)

// schemaField reads an inline schema, a schema name or a .json path;
// problems are reported under step ("" outside steps).
func (d *decoder) schemaField(f field, name, step string) *Schema {
	if _, ok := fieldsOf(f.value); ok {
		doc, err := toValue(f.value)
		if err != nil {
			d.posErr(err, step)
			return nil
		}
		s, err := CompileSchema(name, doc)
		if err != nil {
			d.diags.add(posOf(f.value), step, "%v", err)
			return nil
		}
		return s
	}
	if b, ok := f.value.(*ast.BoolNode); ok {
		s, _ := CompileSchema(name, b.Value)
		return s
	}
	ref, ok := d.str(f, step)
	if !ok {
		return nil
	}
	s, err := d.schemas.resolve(ref)
	if err != nil {
		d.diags.add(posOf(f.value), step, "%s: %v", f.key, err)
		return nil
	}
	return s
}
