package cassette_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/cassette"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"exchanges":[{"request":{"model":"m","messages":[{"role":"user","content":"hi"}],"schema":{"type":"object"}},"response":{"text":"x","usage":{"in":1,"out":2}}}]}`,
		`{"version":1,"exchanges":[{"key":"` + strings.Repeat("0", 64) + `","request":{"messages":[]},"error":{"class":"transient","message":"m"}}]}`,
		`{"version":2}`,
		`{"version":1}{}`,
		`{"version":1,"exchanges":[{"request":{"messages":[{"content":5}]}}]}`,
		"{\n\"version\": 1,\n oops}",
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := cassette.Parse(data, "f.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cassette f.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if c.Version != cassette.Version || c.Exchanges == nil {
			t.Fatalf("accepted %+v", c)
		}
		// Every accepted exchange replays, once.
		p := cassette.NewPlayer(c, "f.json")
		for _, x := range c.Exchanges {
			if x.Key == "" {
				t.Fatal("exchange without a key")
			}
			if x.Key != cassette.Key(&model.Request{Model: x.Request.Model, Decision: x.Request.Decision, Messages: x.Request.Messages, Schema: x.Request.Schema}) {
				continue // a hand-set key: it answers some other request
			}
			r := &model.Request{Model: x.Request.Model, Decision: x.Request.Decision, Messages: x.Request.Messages, Schema: x.Request.Schema}
			resp, err := p.Generate(context.Background(), r)
			if x.Response != nil && (resp == nil || resp.Text != x.Response.Text) {
				t.Fatalf("replayed %+v, %v for %+v", resp, err, x)
			}
			if x.Error != nil && err == nil {
				t.Fatalf("recorded error not replayed: %+v", x)
			}
		}
	})
}
