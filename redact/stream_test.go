package redact_test

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/redact"
)

// TestStreamHidesSecretsSplitAcrossPieces feeds a text holding a known
// secret, a credential-shaped word and a bearer token in pieces of every
// size: what comes out is the whole text redacted, and no piece passed on
// holds more than 3 bytes of a secret.
func TestStreamHidesSecretsSplitAcrossPieces(t *testing.T) {
	const secret = "hunter2-correct-horse"
	const key = "sk-abcdefghijklmnopqrstuvwx"
	r := redact.New(secret)
	text := strings.Repeat("lorem ipsum dolor ", 12) + "the password is " + secret + " and the key " + key +
		" then Authorization: Bearer abcdefghijklmnop1234 " + strings.Repeat("sit amet ", 20) + "end"
	want := r.String(text)
	for size := 1; size <= 40; size++ {
		var out []string
		s := r.Stream(func(p string) { out = append(out, p) })
		for i := 0; i < len(text); i += size {
			s.Write(text[i:min(i+size, len(text))])
		}
		s.Flush()
		got := strings.Join(out, "")
		if got != want {
			t.Fatalf("pieces of %d: got\n%q\nwant\n%q", size, got, want)
		}
		for _, p := range out {
			for _, leak := range []string{secret[:4], key[:8], "abcdefghijklmnop"} {
				if strings.Contains(p, leak) {
					t.Fatalf("pieces of %d: %q passed on %q", size, p, leak)
				}
			}
		}
		if size == 1 && len(out) < 2 {
			t.Fatalf("pieces of 1: passed on %d pieces, want the text streamed, not held to the end", len(out))
		}
	}
}

// TestStreamDrop forgets what is held back.
func TestStreamDrop(t *testing.T) {
	var out []string
	s := redact.New().Stream(func(p string) { out = append(out, p) })
	s.Write("short")
	s.Drop()
	s.Flush()
	if len(out) != 0 {
		t.Fatalf("passed on %q after Drop", out)
	}
}
