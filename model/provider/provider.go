package provider

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/model"
)

// Spec is one configured model: a rein.yaml `models:` entry, or what
// ParseRef makes of `--model provider/model`. Only Provider and Model are
// required; presets fill the rest.
type Spec struct {
	// Provider names a preset: openai, anthropic, deepseek, ollama, vllm
	// or lmstudio (see Presets).
	Provider string `yaml:"provider" json:"provider"`
	// Model is the provider's model name (gpt-4o-mini, claude-sonnet-4-5,
	// deepseek-chat, llama3.2).
	Model string `yaml:"model" json:"model"`
	// BaseURL is the API root. Defaults to the preset's BaseURLEnv
	// variable (OPENAI_BASE_URL, ANTHROPIC_BASE_URL) when it is set, else
	// the preset's BaseURL.
	BaseURL string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	// APIKeyEnv is the environment variable holding the API key. Defaults
	// to the preset's. Keys are only ever read from the environment.
	APIKeyEnv string `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty"`
	// MaxTokens caps each reply. Defaults to the server's default
	// (OpenAI-compatible) or 4096 (anthropic).
	MaxTokens int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	// Timeout bounds each call ("30s", "2m"). Defaults to 10 minutes.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Structured is how a schema is sent to an OpenAI-compatible server:
	// "json_schema" (strict structured outputs), "json_object" (JSON mode)
	// or "none". Defaults to the preset's. Ignored for anthropic, which
	// always uses tool use.
	Structured string `yaml:"structured,omitempty" json:"structured,omitempty"`
}

// Preset is what a provider name stands for.
type Preset struct {
	// Name is the provider name a Spec uses.
	Name string
	// API is the wire protocol: "openai" (Chat Completions) or "anthropic"
	// (Messages).
	API string
	// BaseURL is the default API root.
	BaseURL string
	// BaseURLEnv is the environment variable that, when set, replaces
	// BaseURL for a Spec without base_url (an OpenAI- or
	// Anthropic-compatible server, a proxy), as the providers' own SDKs
	// read it; "" for presets that read none.
	BaseURLEnv string
	// KeyEnv is the default environment variable holding the key.
	KeyEnv string
	// KeyRequired is false for local servers, which run without a key.
	KeyRequired bool
	// Structured is the default structured-output mode ("" lets the
	// adapter decide from the base URL).
	Structured string
}

var presets = map[string]Preset{
	"openai":    {Name: "openai", API: "openai", BaseURL: "https://api.openai.com/v1", BaseURLEnv: "OPENAI_BASE_URL", KeyEnv: "OPENAI_API_KEY", KeyRequired: true},
	"anthropic": {Name: "anthropic", API: "anthropic", BaseURL: "https://api.anthropic.com", BaseURLEnv: "ANTHROPIC_BASE_URL", KeyEnv: "ANTHROPIC_API_KEY", KeyRequired: true},
	"deepseek":  {Name: "deepseek", API: "openai", BaseURL: "https://api.deepseek.com", KeyEnv: "DEEPSEEK_API_KEY", KeyRequired: true, Structured: "json_object"},
	"ollama":    {Name: "ollama", API: "openai", BaseURL: "http://localhost:11434/v1", Structured: "json_schema"},
	"vllm":      {Name: "vllm", API: "openai", BaseURL: "http://localhost:8000/v1", KeyEnv: "VLLM_API_KEY", Structured: "json_schema"},
	"lmstudio":  {Name: "lmstudio", API: "openai", BaseURL: "http://localhost:1234/v1", Structured: "json_schema"},
}

// Presets returns the known providers, sorted by name.
func Presets() []Preset {
	out := make([]Preset, 0, len(presets))
	for _, p := range presets {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the preset for a provider name (case-insensitive).
func Lookup(name string) (Preset, bool) {
	p, ok := presets[strings.ToLower(strings.TrimSpace(name))]
	return p, ok
}

func names() string {
	var b strings.Builder
	for i, p := range Presets() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
	}
	return b.String()
}

// ParseRef parses a model reference "provider/model" (as given to --model
// or a step's model:) into a Spec. The model part may hold further
// slashes ("vllm/meta-llama/Llama-3.1-8B-Instruct"). It fails when there
// is no slash, a part is empty, or the provider is unknown.
func ParseRef(ref string) (Spec, error) {
	prov, name, ok := strings.Cut(strings.TrimSpace(ref), "/")
	if !ok || prov == "" || name == "" {
		return Spec{}, fmt.Errorf("model %q is not provider/model (e.g. openai/gpt-4o-mini; providers: %s)", ref, names())
	}
	p, ok := Lookup(prov)
	if !ok {
		return Spec{}, fmt.Errorf("model %q: unknown provider %q (known: %s)", ref, prov, names())
	}
	return Spec{Provider: p.Name, Model: name}, nil
}

// KeyError is Open's error when the environment variable holding the key
// a model needs is empty or unset.
type KeyError struct {
	Provider, Model string
	// Env is the variable to set.
	Env string
}

// Error says which variable to set.
func (e *KeyError) Error() string {
	return fmt.Sprintf("%s/%s needs an API key: set the environment variable %s (or name another one with api_key_env)", e.Provider, e.Model, e.Env)
}

// Open builds the Model spec describes. getenv reads the environment (pass
// os.Getenv; tests pass a map's lookup); it is asked only for the key
// variable and, for a spec without BaseURL, the preset's BaseURLEnv. Open fails, saying what to set, when the provider is unknown,
// the model is missing, the adapter of the preset's API is not in the
// program (an error wrapping ErrNoAdapter that names the package to
// import), or the key variable is empty where a key is needed (always for
// hosted providers; for local ones only when the spec names a variable
// itself: a *KeyError). Open makes no network call.
func Open(spec Spec, getenv func(string) string) (model.Model, error) {
	p, ok := Lookup(spec.Provider)
	if !ok {
		if spec.Provider == "" {
			return nil, fmt.Errorf("model %q: provider is missing (one of %s)", spec.Model, names())
		}
		return nil, fmt.Errorf("model %q: unknown provider %q (known: %s)", spec.Model, spec.Provider, names())
	}
	if strings.TrimSpace(spec.Model) == "" {
		return nil, fmt.Errorf("provider %s: model is missing (e.g. model: %s)", p.Name, example(p))
	}
	if spec.MaxTokens < 0 {
		return nil, fmt.Errorf("%s/%s: max_tokens %d is negative", p.Name, spec.Model, spec.MaxTokens)
	}
	switch spec.Structured {
	case "", "json_schema", "json_object", "none":
	default:
		return nil, fmt.Errorf("%s/%s: structured %q is not json_schema, json_object or none", p.Name, spec.Model, spec.Structured)
	}
	baseURL, fromEnv := spec.BaseURL, ""
	if baseURL == "" && p.BaseURLEnv != "" && getenv != nil {
		if baseURL = strings.TrimSpace(getenv(p.BaseURLEnv)); baseURL != "" {
			fromEnv = p.BaseURLEnv
		}
	}
	if baseURL == "" {
		baseURL = p.BaseURL
	}
	if err := hasAdapter(p, spec.Model); err != nil {
		return nil, err
	}
	keyEnv, required := spec.APIKeyEnv, p.KeyRequired || spec.APIKeyEnv != ""
	if keyEnv == "" {
		keyEnv = p.KeyEnv
	}
	var key string
	if keyEnv != "" && getenv != nil {
		key = strings.TrimSpace(getenv(keyEnv))
	}
	if key == "" && required {
		return nil, &KeyError{Provider: p.Name, Model: spec.Model, Env: keyEnv}
	}
	structured := spec.Structured
	if structured == "" {
		structured = p.Structured
	}
	m, err := build(Config{
		Provider: p.Name, API: p.API, Model: spec.Model, BaseURL: baseURL,
		APIKey: key, APIKeyEnv: keyEnv, MaxTokens: spec.MaxTokens,
		Timeout: time.Duration(spec.Timeout), Structured: structured,
	})
	if err != nil && fromEnv != "" {
		return nil, fmt.Errorf("%w (the base URL is the environment variable %s: correct or unset it)", err, fromEnv)
	}
	return m, err
}

func example(p Preset) string {
	switch p.Name {
	case "anthropic":
		return "claude-sonnet-4-5"
	case "deepseek":
		return "deepseek-chat"
	case "ollama":
		return "llama3.2"
	case "openai":
		return "gpt-4o-mini"
	}
	return "the name the server lists"
}

// Duration is a time.Duration written as "30s" or "2m" (YAML or JSON), or
// as a number of seconds.
type Duration time.Duration

// UnmarshalText parses "30s", "1m30s" or a number of seconds.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "" {
		*d = 0
		return nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("timeout %q is not a duration (e.g. 30s, 2m)", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalJSON accepts a string ("30s") or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return d.UnmarshalText([]byte(s))
	}
	return d.UnmarshalText(b)
}
