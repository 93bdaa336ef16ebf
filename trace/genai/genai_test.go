package genai_test

import (
	"testing"

	"github.com/reinhq/rein/trace/genai"
)

// The conventions' own names stay; a compatible server gets its API's.
func TestProviderOf(t *testing.T) {
	for _, tc := range []struct{ preset, api, want string }{
		{"openai", "openai", "openai"},
		{"anthropic", "anthropic", "anthropic"},
		{"deepseek", "openai", "deepseek"},
		{"ollama", "openai", "openai"},
		{"vllm", "openai", "openai"},
		{"lmstudio", "openai", "openai"},
	} {
		if got := genai.ProviderOf(tc.preset, tc.api); got != tc.want {
			t.Errorf("ProviderOf(%q, %q) = %q, want %q", tc.preset, tc.api, got, tc.want)
		}
	}
}
