//go:build linux

package exec

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// An exec tool gets BaseEnv, what PassEnv names and Env; rein's other
// variables (API keys above all) stay in rein.
func TestCallEnvironmentIsExplicit(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv("OPENAI_API_KEY", "sk-test-never-passed-0123456789")
	t.Setenv("REIN_TEST_PASSED", "passed by name")
	t.Setenv("REIN_TEST_AWS_REGION", "passed by prefix")
	t.Setenv("REIN_TEST_UNNAMED", "not passed")
	t.Setenv("LC_TEST_LOCALE", "base env prefix")
	tl := scriptTool(t, `env | grep -E '^(OPENAI|REIN_TEST|LC_TEST|SET_BY)' | sort | sed 's/.*/"&",/' | tr -d '\n' | sed 's/^/[/; s/,$/]/'`, func(c *Config) {
		c.PassEnv = []string{"REIN_TEST_PASSED", "REIN_TEST_AWS_*"}
		c.Env = map[string]string{"SET_BY_CONFIG": "yes"}
	})
	got, err := tl.Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"LC_TEST_LOCALE=base env prefix", "REIN_TEST_AWS_REGION=passed by prefix", "REIN_TEST_PASSED=passed by name", "SET_BY_CONFIG=yes"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("environment = %v\nwant %v", got, want)
	}
}

// A secret the tool was given and prints on stderr is hidden in the error.
func TestCallStderrHidesPassedSecrets(t *testing.T) {
	t.Setenv("SERVICE_TOKEN", "tok-abcdefgh-12345678")
	tl := scriptTool(t, `echo "auth failed for $SERVICE_TOKEN" | tr a-z A-Z >&2; exit 3`, func(c *Config) {
		c.PassEnv = []string{"SERVICE_TOKEN"}
	})
	_, err := tl.Call(context.Background(), nil)
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(strings.ToLower(err.Error()), "tok-abcdefgh-12345678") || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("error = %v", err)
	}
}

func TestNewRejectsBadPassEnv(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Name: "t", Command: []string{"x"}, Effect: "none", PassEnv: []string{"", "A=B", "REIN_RUN_ID", "*"}})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{`pass_env "" is not`, `pass_env "A=B" is not`, "pass_env REIN_RUN_ID is reserved", `pass_env "*" is not`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
