package model_test

import (
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/model"
)

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`{"route":"account","reason":"billing"}`,
		"```json\n{\"route\":\"a\"}\n```",
		`{"route":"a"} {"route":"b"}`,
		`{"route":"a"}}`,
		`{"route": "acc`,
		`{"route":1,"extra":[]}`,
		`[[[[[[1]]]]]]`,
		`"é\u2028"`,
		"Sure! Here you go.",
		"```",
		"",
		"\xff\xfe",
	} {
		f.Add(s)
	}
	sch, err := model.SchemaFor[routeChoice]()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := model.ParseJSON[any](text, nil)
		if err != nil && err.Error() == "" {
			t.Fatalf("empty error for %q", text)
		}
		if err == nil {
			// What was accepted is exactly one JSON value.
			if body := model.StripFence(text); !json.Valid([]byte(body)) {
				t.Fatalf("accepted %q, whose body %q is not one JSON value", text, body)
			}
			if _, merr := json.Marshal(v); merr != nil {
				t.Fatalf("accepted %q as %#v, which cannot be written back: %v", text, v, merr)
			}
		}
		c, err := model.ParseJSON[routeChoice](text, sch)
		if err != nil && err.Error() == "" {
			t.Fatalf("empty error for %q as routeChoice", text)
		}
		if err == nil {
			// The schema and the decoder agree: a route was given.
			if again, err := model.ParseJSON[routeChoice](`{"route":`+jsonString(c.Route)+`}`, sch); err != nil || again.Route != c.Route {
				t.Fatalf("route %q of %q does not round-trip: %v", c.Route, text, err)
			}
		}
		if _, err := model.ParseJSON[routeChoice](text, nil); err != nil && err.Error() == "" {
			t.Fatalf("empty error for %q without a schema", text)
		}
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
