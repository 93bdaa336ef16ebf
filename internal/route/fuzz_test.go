package route_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/internal/route"
)

// FuzzParse checks that Parse never panics, that every problem it reports
// is located in the file, and that what it accepts builds a Router that
// routes without panicking.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	bad, _ := filepath.Glob("testdata/bad/*.yaml")
	for _, path := range append(files, bad...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"routes: []", "routes:\n- name: a\n  description: b\n  rules: [{expr: 'len(text) > 2'}]\nfallback: a\n",
		"routes:\n- {name: a, description: b, rules: [{regexp: '(?i)a+'}]}\nrules: [{prefix: x, route: a}]",
		"- a\n- b", "routes: !!map {}", "routes:\n  - name: a\n    name: b", "? a\n: b", "routes: [{<<: {name: a}}]",
		"\t", "routes:\n- name: a\n  description: |\n    multi\n    line\n  rules:\n  - expr: |\n      text contains 'a' &&\n",
		"---\nroutes: []\n---\nroutes: []\n", "%YAML 1.2\n---\nroutes: []", "routes: [[[[[[[[[[]]]]]]]]]]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := route.Parse("fuzz.yaml", data)
		if err != nil {
			var e *route.Error
			if !errors.As(err, &e) || len(e.Problems) == 0 {
				t.Fatalf("error %v is not a *route.Error with problems", err)
			}
			for _, p := range e.Problems {
				if p.File != "fuzz.yaml" || p.Line < 1 || p.Col < 1 || p.Message == "" {
					t.Fatalf("problem not located: %+v", p)
				}
			}
			return
		}
		r, err := file.Router(nil)
		if err != nil {
			t.Fatalf("Parse accepted the file but Router failed: %v", err)
		}
		for _, text := range []string{"", "weather: x", "invoice", string(data)} {
			res, err := r.Route(context.Background(), route.Request{Text: text})
			if err == nil && !r.Has(res.Route) {
				t.Fatalf("routed to %q, not a route", res.Route)
			}
		}
	})
}
