package openai

import (
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/provider"
)

// Importing the package registers it with model/provider as the adapter
// of the "openai" API: the openai, deepseek, ollama, vllm and lmstudio
// presets, and any OpenAI-compatible base_url.
func init() {
	provider.Register("openai", func(c provider.Config) (model.Model, error) {
		m, err := New(Config{
			BaseURL: c.BaseURL, APIKey: c.APIKey, APIKeyEnv: c.APIKeyEnv, Model: c.Model,
			MaxTokens: c.MaxTokens, Timeout: c.Timeout, Structured: Structured(c.Structured),
		})
		if err != nil {
			return nil, err
		}
		return m, nil
	})
}
