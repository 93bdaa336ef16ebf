package mcp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAdmit: each incoming message is passed on with its request id
// replaced by a token, or answered with the JSON-RPC error a careful
// server gives, carrying the id when it can be read.
func TestAdmit(t *testing.T) {
	t.Parallel()
	deep := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{"x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}}`
	for _, c := range []struct {
		msg  string
		code int    // 0: passed on
		id   string // the answer's id, or the id the token stands for
	}{
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, 0, `1.5`},
		{`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, 0, `123456789012345678901234567890`},
		{`{"jsonrpc":"2.0","id":"a\u0041<b>","method":"ping"}`, 0, `"a\u0041<b>"`},
		{`{"jsonrpc":"2.0","id":-0e+1,"method":"ping"}`, 0, `-0e+1`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, ``},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, 0, ``}, // an answer to the server: untouched
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, codeInvalidRequest, `null`},
		{deep, codeInvalidRequest, `9`},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{"x":[` + strings.Repeat(`{},`, MaxValues) + `{}]}}}`, codeInvalidRequest, `8`},
		{`{"jsonrpc":"2.0","id":"x","method":"ping",` + strings.Repeat(" ", 10) + `"id":"y"}`, codeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":"x","method":"ping"`, codeParseError, `null`},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, codeInvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, codeInvalidRequest, `null`},
		{`{"jsonrpc":"1.0","id":4,"method":"ping"}`, codeInvalidRequest, `4`},
		{`{"jsonrpc":"2.0","id":4,"method":["ping"]}`, codeInvalidRequest, `4`},
		{`{"jsonrpc":"2.0","id":4}`, codeInvalidRequest, `4`},
		{`{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"` + strings.Repeat("a", MaxMessageBytes) + `"}}`, codeInvalidRequest, `null`},
	} {
		ids := &idTable{}
		pass, answer := admit([]byte(c.msg), ids)
		name := c.msg
		if len(name) > 60 {
			name = name[:60] + "…"
		}
		if c.code != 0 {
			var a struct {
				ID    json.RawMessage
				Error struct{ Code int }
			}
			if pass != nil || json.Unmarshal(answer, &a) != nil || a.Error.Code != c.code || string(a.ID) != c.id {
				t.Errorf("%s: passed %q, answered %s; want code %d, id %s", name, pass, answer, c.code, c.id)
			}
			continue
		}
		if answer != nil || !json.Valid(pass) {
			t.Errorf("%s: answered %s, passed %q", name, answer, pass)
			continue
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(pass, &m)
		if c.id == "" {
			if !bytes.Equal(pass, []byte(c.msg)) {
				t.Errorf("%s: passed as %s, want it untouched", name, pass)
			}
			continue
		}
		out := restoreID([]byte(`{"jsonrpc":"2.0","id":`+string(m["id"])+`,"result":{}}`), ids)
		if want := `{"jsonrpc":"2.0","id":` + c.id + `,"result":{}}`; string(out) != want {
			t.Errorf("%s: token %s, answer %s, want %s", name, m["id"], out, want)
		}
		if again := restoreID(out, ids); !bytes.Equal(again, out) {
			t.Errorf("%s: a token restored twice", name)
		}
	}
}

// TestAdmitCancelled: notifications/cancelled names the open request by
// the id the client sent; the SDK gets that request's token.
func TestAdmitCancelled(t *testing.T) {
	t.Parallel()
	ids := &idTable{}
	pass, _ := admit([]byte(`{"jsonrpc":"2.0","id":1.5,"method":"tools/call"}`), ids)
	var req struct{ ID json.RawMessage }
	_ = json.Unmarshal(pass, &req)
	pass, answer := admit([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5,"reason":"x"}}`), ids)
	var n struct {
		Params struct{ RequestID json.RawMessage }
	}
	if answer != nil || json.Unmarshal(pass, &n) != nil || string(n.Params.RequestID) != string(req.ID) {
		t.Errorf("cancelled passed as %s (answer %s), want requestId %s", pass, answer, req.ID)
	}
}

// FuzzScanFrame: scanFrame accepts exactly what json.Valid accepts (within
// its depth), and the members it reports are the top-level object's.
func FuzzScanFrame(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[1,{"a":[]}]`, `{"a" : "\u00e9\"" , "b":-1.5e+3}`, `"x"`, `{"a":{"b":[null,true,false]}}`, `{`, `{"a":1,}`, "\"\x01\"", `01`, `[[[[[]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		members, err := scanFrame(b, 10000, len(b)+1)
		if valid := json.Valid(b); (err == nil) != valid {
			t.Fatalf("scanFrame(%q) = %v, json.Valid = %v", b, err, valid)
		}
		if err != nil {
			if err.code != codeParseError {
				t.Fatalf("scanFrame(%q): code %d for invalid JSON", b, err.code)
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			if members != nil {
				t.Fatalf("scanFrame(%q) reports members of a value that is not an object", b)
			}
			return
		}
		seen := map[string]bool{}
		for _, mb := range members {
			if seen[mb.key] {
				return // json.Unmarshal keeps the last; admit refuses the message
			}
			seen[mb.key] = true
		}
		for _, mb := range members {
			if !bytes.Equal(b[mb.start:mb.end], m[mb.key]) {
				t.Fatalf("scanFrame(%q): member %q = %q, want %q", b, mb.key, b[mb.start:mb.end], m[mb.key])
			}
		}
		if len(seen) != len(m) {
			t.Fatalf("scanFrame(%q): %d members, want %d", b, len(seen), len(m))
		}
	})
}

// FuzzAdmit: whatever a client sends, admit either passes on JSON whose
// id (if any) is a token or the id as sent, or answers one JSON-RPC error
// line; a scan deeper than MaxDepth is never needed to refuse it.
func FuzzAdmit(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`, `[` + strings.Repeat(`[`, 100)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pass, answer := admit(b, &idTable{})
		if (pass == nil) == (answer == nil) {
			t.Fatalf("admit(%q) = %q, %q: want exactly one", b, pass, answer)
		}
		if answer != nil {
			var a struct {
				JSONRPC string
				Error   struct{ Code int }
			}
			if !bytes.HasSuffix(answer, []byte("\n")) || bytes.Count(answer, []byte("\n")) != 1 || json.Unmarshal(answer, &a) != nil || a.JSONRPC != "2.0" || a.Error.Code == 0 {
				t.Fatalf("admit(%q) answered %q", b, answer)
			}
			return
		}
		if _, err := scanFrame(pass, MaxDepth, MaxValues); err != nil {
			t.Fatalf("admit(%q) passed %q, which is not a bounded JSON message: %s", b, pass, err.msg)
		}
	})
}
