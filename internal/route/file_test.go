package route_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/route"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/bad")

func TestParseFile(t *testing.T) {
	t.Parallel()
	f, err := route.ParseFile("testdata/routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Model != "default" || f.Fallback != "" || len(f.Routes) != 3 {
		t.Fatalf("got model %q fallback %q routes %v", f.Model, f.Fallback, f.Routes)
	}
	want := []route.Rule{
		{Prefix: "weather:", Route: "weather"},
		{Regexp: `(?i)\bforecast\b`, Route: "weather"},
		{Expr: "text contains 'invoice'", Route: "account"},
		{Expr: "metadata.channel == 'billing-desk'", Route: "account"},
	}
	if len(f.Rules) != len(want) {
		t.Fatalf("rules %v", f.Rules)
	}
	for i := range want {
		if f.Rules[i] != want[i] {
			t.Errorf("rule %d: got %+v, want %+v", i, f.Rules[i], want[i])
		}
	}
	sem := route.ScriptedMap(map[string]route.Choice{"rewrite this politely": {Route: "general", Reason: "a rewrite"}})
	r, err := f.Router(sem)
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]string{"weather: Tokyo": "weather", "my invoice": "account", "rewrite this politely": "general"} {
		if res, err := r.Route(context.Background(), route.Request{Text: text}); err != nil || res.Route != want {
			t.Errorf("%q: got %+v, %v; want %s", text, res, err, want)
		}
	}
	if sem.Calls() != 1 {
		t.Errorf("semantic router called %d times, want 1", sem.Calls())
	}
}

func TestParseRuleOrderIsFileOrder(t *testing.T) {
	t.Parallel()
	src := `
rules:
  - {prefix: "a", route: two}
routes:
  - name: one
    description: first
    rules: [{prefix: "a"}, {prefix: "b"}]
  - name: two
    description: second
    rules:
      - prefix: "b"
`
	f, err := route.Parse("order.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range f.Rules {
		got = append(got, r.Prefix+">"+r.Route)
	}
	if strings.Join(got, " ") != "a>two a>one b>one b>two" {
		t.Fatalf("rules in order %v", got)
	}
}

func TestFileFallbackRefusesSemantic(t *testing.T) {
	t.Parallel()
	src := "routes:\n  - name: general\n    description: Anything\nfallback: general\n"
	f, err := route.Parse("fb.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := f.Router(nil); err != nil || !r.Has("general") {
		t.Fatalf("Router(nil): %v", err)
	}
	_, err = f.Router(route.ScriptedMap(nil))
	if err == nil || !strings.HasPrefix(err.Error(), "fb.yaml:4:11: a fallback route cannot be combined with a semantic router") {
		t.Fatalf("got %v", err)
	}
}

// TestParseErrors checks the messages for bad routes files against
// testdata/bad/*.golden (go test ./route -run TestParseErrors -update
// rewrites them).
func TestParseErrors(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			_, err := route.ParseFile(path)
			var e *route.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want *route.Error", err)
			}
			for _, p := range e.Problems {
				if p.File != path || p.Line < 1 || p.Col < 1 {
					t.Errorf("problem not located: %+v", p)
				}
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(path, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("messages differ from %s:\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func TestParseFileMissing(t *testing.T) {
	t.Parallel()
	_, err := route.ParseFile("testdata/nope.yaml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

// TestParseFileLimit checks that a routes file past MaxFileSize is refused,
// naming it, before it is read whole; a BOM is accepted.
func TestParseFileLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", route.MaxFileSize)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := route.ParseFile(big); err == nil || !strings.Contains(err.Error(), big+" is 1048578 bytes, more than the 1048576 it may have") {
		t.Fatalf("err = %v", err)
	}
	bom := filepath.Join(dir, "bom.yaml")
	if err := os.WriteFile(bom, []byte("\xEF\xBB\xBFroutes:\n  - {name: a, description: b}\nfallback: a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := route.ParseFile(bom); err != nil {
		t.Fatalf("a routes file with a BOM: %v", err)
	}
}
