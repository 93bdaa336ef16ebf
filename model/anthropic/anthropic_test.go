package anthropic_test

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/anthropic"
	"github.com/reinhq/rein/model/modeltest"
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

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		New: func(baseURL, apiKey string) model.Model {
			m, err := anthropic.New(anthropic.Config{BaseURL: baseURL, APIKey: apiKey})
			if err != nil {
				panic(err)
			}
			return m
		},
		KeyEnv: "ANTHROPIC_API_KEY",
		Wire:   wire(),
	})
}
