package seal_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/redact/seal"
)

func newKey(t testing.TB, id string) (seal.Key, string) {
	t.Helper()
	raw := make([]byte, seal.KeySize)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	text := base64.StdEncoding.EncodeToString(raw)
	k, err := seal.ParseKey(id, []byte(text+"\n"), "key_env TEST")
	if err != nil {
		t.Fatal(err)
	}
	return k, text
}

func TestSealOpensWithTheSameKeyAndPlace(t *testing.T) {
	k, text := newKey(t, "k1")
	c, err := seal.New(k)
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte(`{"token":"s3cr3t-value-123"}`)
	a, err := c.Seal(plain, []byte("run1/step/a/output"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Seal(plain, []byte("run1/step/a/output"))
	if a == b {
		t.Fatal("two seals of one payload are equal: the nonce is not random")
	}
	if !strings.HasPrefix(a, seal.Prefix+"k1.") {
		t.Fatalf("sealed payload %q does not name its key", a)
	}
	for _, leak := range []string{"s3cr3t", text} {
		if strings.Contains(a, leak) {
			t.Fatalf("sealed payload holds %q", leak)
		}
	}
	got, err := c.Open(a, []byte("run1/step/a/output"))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	// moved to another place: refused.
	var se *seal.Error
	if _, err := c.Open(a, []byte("run2/step/a/output")); !errors.As(err, &se) {
		t.Fatalf("Open at another place = %v, want *seal.Error", err)
	}
}

func TestRotation(t *testing.T) {
	k1, _ := newKey(t, "k1")
	k2, _ := newKey(t, "k2")
	old, _ := seal.New(k1)
	sealed, err := old.Seal([]byte("payload"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := seal.New(k2, k1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(sealed, nil); err != nil || string(got) != "payload" {
		t.Fatalf("Open with the old key listed = %q, %v", got, err)
	}
	fresh, _ := rotated.Seal([]byte("x"), nil)
	if !strings.HasPrefix(fresh, seal.Prefix+"k2.") {
		t.Fatalf("rotated codec seals with %q, want k2", fresh)
	}
	gone, _ := seal.New(k2)
	_, err = gone.Open(sealed, nil)
	var mk *seal.MissingKeyError
	if !errors.As(err, &mk) || mk.KeyID != "k1" {
		t.Fatalf("Open without k1 = %v, want a *MissingKeyError for k1", err)
	}
	if _, err := (*seal.Codec)(nil).Open(sealed, nil); !errors.As(err, &mk) || !strings.Contains(err.Error(), "no encryption key is configured") {
		t.Fatalf("nil codec Open = %v", err)
	}
	if _, err := seal.New(k1, k1); err == nil {
		t.Fatal("two keys of one id were accepted")
	}
}

func TestParseKey(t *testing.T) {
	raw := bytes.Repeat([]byte{0xab}, 32)
	for _, text := range []string{base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw),
		fmt.Sprintf("%x\n", raw), string(raw)} {
		if _, err := seal.ParseKey("k", []byte(text), "key_file k.key"); err != nil {
			t.Errorf("ParseKey(%q): %v", text, err)
		}
	}
	for _, text := range []string{"", "c2hvcnQ=", "not a key at all, just some words here"} {
		_, err := seal.ParseKey("k", []byte(text), "key_file k.key")
		if err == nil {
			t.Errorf("ParseKey(%q) accepted it", text)
			continue
		}
		if text != "" && strings.Contains(err.Error(), text) {
			t.Errorf("the error quotes the key text: %v", err)
		}
		if !strings.Contains(err.Error(), "key_file k.key") || !strings.Contains(err.Error(), "openssl rand -base64 32") {
			t.Errorf("the error does not say where and what to do: %v", err)
		}
	}
	if _, err := seal.ParseKey("k:1", []byte(base64.StdEncoding.EncodeToString(raw)), "x"); err == nil {
		t.Error("a key id with ':' was accepted")
	}
	k, _ := seal.ParseKey("k", raw, "x")
	if s := fmt.Sprintf("%v %+v %#v", k, k, k); strings.Contains(s, "171") || strings.Contains(s, "ab") {
		t.Errorf("a key prints its bits: %s", s)
	}
}

func TestOpenRefusesGarbledPayloads(t *testing.T) {
	k, _ := newKey(t, "k1")
	c, _ := seal.New(k)
	good, _ := c.Seal([]byte("payload"), nil)
	cases := map[string]struct {
		in     string
		offset int
		says   string
	}{
		"not sealed":   {"hello", 0, "does not start with"},
		"newer format": {"rein-seal.v2.k1.AAAA", 11, "does not start with"},
		"no dot":       {seal.Prefix + "k1", len(seal.Prefix) + 2, "does not end with a dot"},
		"bad key id":   {seal.Prefix + "k 1.AAAA", len(seal.Prefix), "key id"},
		"bad base64":   {seal.Prefix + "k1.AA*A", len(seal.Prefix) + 3 + 2, "base64url"},
		"short":        {seal.Prefix + "k1.AAAA", len(seal.Prefix) + 3, "fewer than a nonce"},
		"altered":      {good[:len(good)-2] + flip(good[len(good)-2:]), len(seal.Prefix) + 3, "does not decrypt"},
		"oversized":    {strings.Repeat("a", seal.MaxSealedBytes+1), seal.MaxSealedBytes, "over the"},
	}
	for name, tc := range cases {
		_, err := c.Open(tc.in, nil)
		var se *seal.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: Open = %v, want *seal.Error", name, err)
			continue
		}
		if se.Offset != tc.offset || !strings.Contains(se.Problem, tc.says) {
			t.Errorf("%s: %v, want byte %d saying %q", name, err, tc.offset, tc.says)
		}
	}
}

func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}
