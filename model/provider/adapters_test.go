package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/model"
)

// Not parallel: it takes the anthropic adapter out of the registry, which
// this package's other tests (all parallel, so run after it) use.
func TestOpenWithoutTheAdapter(t *testing.T) {
	mu.Lock()
	saved, had := adapters["anthropic"]
	delete(adapters, "anthropic")
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		if had {
			adapters["anthropic"] = saved
		}
		mu.Unlock()
	})
	_, err := Open(Spec{Provider: "anthropic", Model: "claude-sonnet-4-5"}, func(string) string { return "" })
	want := `anthropic/claude-sonnet-4-5: no model adapter for the anthropic API in this program: add import _ "github.com/reinhq/rein/model/anthropic"`
	if err == nil || err.Error() != want || !errors.Is(err, ErrNoAdapter) {
		t.Errorf("Open without the adapter: %v\nwant (wrapping ErrNoAdapter) %s", err, want)
	}
	// The missing adapter is reported before the missing key: setting the
	// key would not help.
	var ke *KeyError
	if errors.As(err, &ke) {
		t.Errorf("Open without the adapter and the key: %v, want the adapter named first", err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	t.Parallel()
	nop := func(Config) (model.Model, error) { return nil, nil }
	for _, c := range []struct {
		api   string
		adapt Adapter
		want  string
	}{
		{"openai", nop, "twice"},
		{"", nop, "required"},
		{"rein-test", nil, "required"},
	} {
		func() {
			defer func() {
				r, _ := recover().(string)
				if !strings.Contains(r, c.want) {
					t.Errorf("Register(%q): panic %q, want one saying %q", c.api, r, c.want)
				}
			}()
			Register(c.api, c.adapt)
		}()
	}
}
