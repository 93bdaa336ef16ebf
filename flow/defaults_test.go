package flow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/flow"
)

const defaultsFlow = `name: d
tools:
  slow: {command: ["./slow.sh"], effect: read}
  quick: {command: ["./quick.sh"], effect: read, timeout: 3s}
  send: {command: ["./send.sh"], effect: external}
  upsert: {command: ["./upsert.sh"], effect: write, idempotent: true}
steps:
  - {id: ask, prompt_template: "a"}
  - {id: pick, type: route, text: "x", routes: [{name: a, description: "all", rules: [{prefix: "a"}]}], fallback_route: a}
  - {id: call, tool: slow, args: {}}
  - {id: once, tool: slow, args: {}, retries: 0, timeout: 45s}
  - {id: ok, type: approval}
  - {id: mail, tool: send, args: {}}
  - {id: mail_again, tool: send, args: {}, retries: 1}
  - {id: save, tool: upsert, args: {}}
`

// Every step that calls something has a timeout and transient retries by
// default; retries: 0 set explicitly means none; rein.yaml defaults:
// replace the built-in values; a step's own fields replace both.
func TestStepDefaultsAndOverrides(t *testing.T) {
	t.Parallel()
	type want struct {
		retries int
		timeout time.Duration
	}
	check := func(f *flow.Flow, wants map[string]want) {
		t.Helper()
		for id, w := range wants {
			s := f.StepByID(id)
			if s.Retries != w.retries || s.Timeout != w.timeout {
				t.Errorf("step %s: retries %d timeout %v, want %d %v", id, s.Retries, s.Timeout, w.retries, w.timeout)
			}
		}
	}
	f := parse(t, defaultsFlow)
	check(f, map[string]want{
		"ask":  {flow.DefaultRetries, flow.DefaultModelTimeout},
		"pick": {flow.DefaultRetries, flow.DefaultModelTimeout},
		"call": {flow.DefaultRetries, 0}, // its exec tool is bounded per call
		"once": {0, 45 * time.Second},
		"ok":   {0, 0}, // an approval calls nothing
		// a side effect that a timeout leaves in doubt is not repeated
		// unless the step says so; an idempotent one is.
		"mail":       {0, 0},
		"mail_again": {1, 0},
		"save":       {flow.DefaultRetries, 0},
	})
	if f.Tools["slow"].Timeout != flow.DefaultToolTimeout || f.Tools["quick"].Timeout != 3*time.Second {
		t.Errorf("exec tool timeouts: slow %v, quick %v", f.Tools["slow"].Timeout, f.Tools["quick"].Timeout)
	}

	cfg, err := flow.ParseConfig([]byte("defaults: {retries: 0, timeout: 20s}\ntools:\n  t: {command: [\"./t.sh\"], effect: read}\n"), "rein.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Defaults == nil || cfg.Defaults.Retries == nil || *cfg.Defaults.Retries != 0 || cfg.Defaults.Timeout != 20*time.Second || cfg.Tools["t"].Timeout != 20*time.Second {
		t.Fatalf("config defaults %+v, tool t %+v", cfg.Defaults, cfg.Tools["t"])
	}
	opts := testOptions()
	opts.Defaults = cfg.Defaults
	f, err = flow.Parse([]byte(defaultsFlow), "flow.yaml", opts)
	if err != nil {
		t.Fatal(err)
	}
	check(f, map[string]want{
		"ask":  {0, 20 * time.Second},
		"call": {0, 20 * time.Second},
		"once": {0, 45 * time.Second},
	})
	if f.Tools["slow"].Timeout != 20*time.Second {
		t.Errorf("exec tool timeout %v, want the defaults' 20s", f.Tools["slow"].Timeout)
	}
}

func TestConfigDefaultsRejectsBadValues(t *testing.T) {
	t.Parallel()
	_, err := flow.ParseConfig([]byte("defaults:\n  retries: 11\n  timeout: -5\n  retry: 1\n"), "rein.yaml")
	if err == nil {
		t.Fatal("bad defaults accepted")
	}
	for _, want := range []string{
		"rein.yaml:2:12: defaults: retries must be between 0 and 10, not 11",
		"rein.yaml:3:12: defaults: timeout must be positive",
		`rein.yaml:4:3: unknown field "retry" in defaults`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
