package redact_test

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/redact"
)

// FuzzString: a known secret (letters and digits, MinLen or longer) never
// survives String, in any case, wherever it stands.
func FuzzString(f *testing.F) {
	f.Add("sk0123456789abcdef", "error: ", " rejected")
	f.Add("PassWord1234", "url ?k=", "&x=1")
	f.Fuzz(func(t *testing.T, secret, before, after string) {
		if len(secret) < redact.MinLen || strings.TrimFunc(secret, isAlnum) != "" {
			return
		}
		out := redact.New(secret).String(before + strings.ToUpper(secret) + after + secret)
		if strings.Contains(strings.ToLower(out), strings.ToLower(secret)) {
			t.Errorf("String kept %q: %q", secret, out)
		}
	})
}

func isAlnum(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

// FuzzDSN: DSN never panics, and hiding twice changes nothing more.
func FuzzDSN(f *testing.F) {
	for _, s := range []string{"postgres://u:p@h/d?password=x", "host=h password='a b' user=u", "postgres://u:p:q@h@i/d", ":memory:", "%zz://a:b@c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		once := redact.DSN(dsn)
		if twice := redact.DSN(once); twice != once {
			t.Errorf("DSN(%q) = %q, then %q", dsn, once, twice)
		}
	})
}

// FuzzFinds: Finds says whether String changes a string, and Bytes
// agrees with String.
func FuzzFinds(f *testing.F) {
	f.Add("sk0123456789abcdef", "token sk-0123456789abcdefghij and ", "Bearer abcdefgh12")
	f.Add("PassWord1234", "cGFzc3dvcmQxMjM0", "AIzaSyA-0123456789012345678901234567")
	f.Fuzz(func(t *testing.T, secret, a, b string) {
		r := redact.New(secret)
		s := a + secret + b
		for _, text := range []string{a, b, s, strings.ToUpper(s)} {
			out := r.String(text)
			if r.Finds(text) != (out != text) {
				t.Errorf("Finds(%q) = %v, String gives %q", text, r.Finds(text), out)
			}
			if got := string(r.Bytes([]byte(text))); got != out {
				t.Errorf("Bytes(%q) = %q, String %q", text, got, out)
			}
		}
	})
}

// FuzzCut: a known secret (letters and digits) cut anywhere and followed
// by the ellipsis keeps at most 2 of its bytes visible before it.
func FuzzCut(f *testing.F) {
	f.Add("sk0123456789abcdef", "token: ", 7)
	f.Add("PassWord1234", "", 3)
	f.Fuzz(func(t *testing.T, secret, before string, n int) {
		if len(secret) < redact.MinLen || strings.TrimFunc(secret, isAlnum) != "" || n < 0 || n >= len(secret) {
			return
		}
		out := redact.New(secret).Cut(before + secret[:n] + redact.Ellipsis)
		body := strings.TrimSuffix(out, redact.Ellipsis)
		for k := 3; k <= n; k++ {
			if strings.HasSuffix(strings.ToLower(body), strings.ToLower(secret[:k])) {
				t.Errorf("Cut left %q of %q: %q", secret[:k], secret, out)
			}
		}
	})
}
