package cassette_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/model/cassette"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"exchanges":[{"request":{"model":"m","messages":[{"role":"user","content":"hi"}],"schema":{"type":"object"}},"response":{"text":"x","usage":{"in":1,"out":2}}}]}`,
		`{"version":1,"exchanges":[{"key":"` + strings.Repeat("0", 64) + `","request":{"messages":[]},"error":{"class":"transient","message":"m"}}]}`,
		`{"version":1,"exchanges":[{"request":{"decision":"agent","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"a","name":"t","args":"{\"x"}]},{"role":"tool","content":"r","tool_call_id":"a","is_error":true}],"tools":[{"name":"t","schema":{"type":"object"}}],"tool_choice":{"mode":"tool","name":"t"}},"response":{"text":"","tool_calls":[{"id":"b","name":"t","args":"{}"}],"usage":{"in":1,"out":2}}}]}`,
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
			r := x.Request.ModelRequest()
			if x.Key != cassette.Key(r) {
				continue // a hand-set key: it answers some other request
			}
			resp, err := p.Generate(context.Background(), r)
			if x.Response != nil && (resp == nil || resp.Text != x.Response.Text || !reflect.DeepEqual(resp.ToolCalls, x.Response.ToolCalls)) {
				t.Fatalf("replayed %+v, %v for %+v", resp, err, x)
			}
			if x.Error != nil && err == nil {
				t.Fatalf("recorded error not replayed: %+v", x)
			}
		}
	})
}
