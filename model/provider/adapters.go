package provider

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/model"
)

// Config is what Open hands an adapter: the Spec with the preset's
// defaults filled in and the key read from the environment.
type Config struct {
	// Provider is the preset's name (openai, deepseek, ollama, …).
	Provider string
	// API is the preset's wire protocol, the name the adapter registered.
	API string
	// Model is the provider's model name.
	Model string
	// BaseURL is the API root: the Spec's, else the preset's.
	BaseURL string
	// APIKey is the key read from APIKeyEnv; empty for a local server
	// that needs none.
	APIKey string
	// APIKeyEnv names the variable the key came from, for errors.
	APIKeyEnv string
	// MaxTokens caps each reply; 0 leaves the adapter's default.
	MaxTokens int
	// Timeout bounds each call; 0 leaves the adapter's default.
	Timeout time.Duration
	// Structured is json_schema, json_object, none, or "" for the
	// adapter to decide (an adapter without the choice ignores it).
	Structured string
}

// An Adapter builds the Model cfg describes. It makes no network call and
// never puts cfg.APIKey in an error.
type Adapter func(cfg Config) (model.Model, error)

// ErrNoAdapter is wrapped by Open's error when the adapter of a
// provider's wire API is not in the program.
var ErrNoAdapter = errors.New("no model adapter")

// adapterPackages names the package that registers each of rein's wire
// APIs, so that a missing one's error says what to import.
var adapterPackages = map[string]string{
	"openai":    "github.com/reinhq/rein/model/openai",
	"anthropic": "github.com/reinhq/rein/model/anthropic",
}

var (
	mu       sync.RWMutex
	adapters = map[string]Adapter{}
)

// Register makes adapt the builder of Models for the wire API api (a
// Preset's API: "openai", "anthropic"). An adapter package calls it from
// its init, so that importing the package is what lets Open build its
// Models and this package links no provider SDK: model/openai registers
// "openai" (openai, deepseek, ollama, vllm, lmstudio), model/anthropic
// "anthropic". Register panics when api is empty, when adapt is nil, or
// when api already has an adapter. It is safe for concurrent use.
func Register(api string, adapt Adapter) {
	if strings.TrimSpace(api) == "" || adapt == nil {
		panic(fmt.Sprintf("provider: Register(%q): the API name and the adapter are required", api))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := adapters[api]; dup {
		panic("provider: Register called twice for API " + api)
	}
	adapters[api] = adapt
}

// hasAdapter fails, naming the import to add, when p's API has no
// adapter in the program.
func hasAdapter(p Preset, modelName string) error {
	mu.RLock()
	_, ok := adapters[p.API]
	mu.RUnlock()
	if ok {
		return nil
	}
	pkg := adapterPackages[p.API]
	if pkg == "" {
		return fmt.Errorf("%s/%s: %w for the %s API in this program", p.Name, modelName, ErrNoAdapter, p.API)
	}
	return fmt.Errorf("%s/%s: %w for the %s API in this program: add import _ %q", p.Name, modelName, ErrNoAdapter, p.API, pkg)
}

// build hands cfg to its API's adapter.
func build(cfg Config) (model.Model, error) {
	mu.RLock()
	adapt := adapters[cfg.API]
	mu.RUnlock()
	if adapt == nil {
		return nil, hasAdapter(Preset{Name: cfg.Provider, API: cfg.API}, cfg.Model)
	}
	return adapt(cfg)
}
