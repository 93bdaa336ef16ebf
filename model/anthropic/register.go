package anthropic

import (
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/provider"
)

// Importing the package registers it with model/provider as the adapter
// of the "anthropic" API (the anthropic preset).
func init() {
	provider.Register("anthropic", func(c provider.Config) (model.Model, error) {
		m, err := New(Config{
			BaseURL: c.BaseURL, APIKey: c.APIKey, APIKeyEnv: c.APIKeyEnv, Model: c.Model,
			MaxTokens: c.MaxTokens, Timeout: c.Timeout,
		})
		if err != nil {
			return nil, err
		}
		return m, nil
	})
}
