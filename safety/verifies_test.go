package safety_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/reinhq/rein/safety"
)

func TestParseVerifies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, ptr string
		tokens  []string
		err     string
	}{
		{in: "account_id", ptr: "/account_id", tokens: []string{"account_id"}},
		{in: "a~b", ptr: "/a~0b", tokens: []string{"a~b"}},
		{in: "/account/id", ptr: "/account/id", tokens: []string{"account", "id"}},
		{in: "/items/*/id", ptr: "/items/*/id", tokens: []string{"items", "*", "id"}},
		{in: "/a~1b/c~0d", ptr: "/a~1b/c~0d", tokens: []string{"a/b", "c~d"}},
		{in: "", err: "an empty entry"},
		{in: "  ", err: "an empty entry"},
		{in: "account/id", err: "write /account/id to name a nested field"},
		{in: "/", err: "token 1 is empty"},
		{in: "/a//b", err: "token 2 is empty"},
		{in: "/a~2", err: "write ~0 for ~ and ~1 for /"},
		{in: "/a~", err: "write ~0 for ~ and ~1 for /"},
		{in: "/" + strings.Repeat("x", 2000), err: "more than 1024"},
	} {
		ptr, toks, err := safety.ParseVerifies(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseVerifies(%q) error = %v, want one saying %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || ptr != c.ptr || !reflect.DeepEqual(toks, c.tokens) {
			t.Errorf("ParseVerifies(%q) = %q, %q, %v; want %q, %q", c.in, ptr, toks, err, c.ptr, c.tokens)
		}
	}
}

// FuzzParseVerifies: no panic; an accepted entry's pointer parses again
// to the same pointer and tokens, with no empty token.
func FuzzParseVerifies(f *testing.F) {
	for _, s := range []string{"account_id", "/a/b", "/items/*/id", "/a~1b", "/a~2", "", "/", "a/b", "~", "/é/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ptr, toks, err := safety.ParseVerifies(in)
		if err != nil {
			if ptr != "" || toks != nil {
				t.Fatalf("ParseVerifies(%q) failed with results %q %q", in, ptr, toks)
			}
			return
		}
		if len(toks) == 0 || !strings.HasPrefix(ptr, "/") {
			t.Fatalf("ParseVerifies(%q) = %q %q", in, ptr, toks)
		}
		for _, tok := range toks {
			if tok == "" {
				t.Fatalf("ParseVerifies(%q) has an empty token", in)
			}
		}
		again, toks2, err := safety.ParseVerifies(ptr)
		if err != nil || again != ptr || !reflect.DeepEqual(toks, toks2) {
			t.Fatalf("ParseVerifies(%q) = %q, parsed again %q %q %v", in, ptr, again, toks2, err)
		}
	})
}
