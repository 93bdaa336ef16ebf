package openai_test

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/modeltest"
	"github.com/reinhq/rein/model/openai"
)

func TestMain(m *testing.M) {
	code := m.Run()
	// Keep-alive connections of the default transport are not leaks.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func newModel(structured openai.Structured) func(baseURL, apiKey string) model.Model {
	return func(baseURL, apiKey string) model.Model {
		m, err := openai.New(openai.Config{BaseURL: baseURL, APIKey: apiKey, Structured: structured})
		if err != nil {
			panic(err)
		}
		return m
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("json_schema", func(t *testing.T) {
		t.Parallel()
		modeltest.Run(t, modeltest.Provider{New: newModel(openai.JSONSchema), KeyEnv: "OPENAI_API_KEY", Wire: wire("json_schema")})
	})
	// An OpenAI-compatible server without strict structured outputs
	// (DeepSeek): JSON mode, the schema in the prompt.
	t.Run("json_object", func(t *testing.T) {
		t.Parallel()
		modeltest.Run(t, modeltest.Provider{New: newModel(""), KeyEnv: "OPENAI_API_KEY", Wire: wire("json_object")})
	})
}
