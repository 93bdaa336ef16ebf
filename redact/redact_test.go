package redact_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/redact"
)

func TestStringHidesEveryEncoding(t *testing.T) {
	t.Parallel()
	const key = "Zq9/Key+Secret&Value=01"
	r := redact.New(key, "short")
	js, _ := json.Marshal(map[string]string{"k": key + "<"})
	cases := map[string]string{
		"as is":            "error: " + key + " rejected",
		"lower":            "error: " + strings.ToLower(key),
		"upper":            "ERROR: " + strings.ToUpper(key),
		"query-escaped":    "url ?k=" + url.QueryEscape(key),
		"path-escaped":     "url /" + url.PathEscape(key),
		"escaped, lower":   strings.ToLower(url.QueryEscape(key)),
		"json":             string(js),
		"base64":           "basic " + base64.StdEncoding.EncodeToString([]byte(key)),
		"base64 url, raw":  base64.RawURLEncoding.EncodeToString([]byte(key)),
		"credential shape": "Authorization: Bearer abcdefghijkl sk-proj-AbCdEfGhIjKlMnOpQrSt",
	}
	for name, in := range cases {
		got := r.String(in)
		if !strings.Contains(got, redact.Mask) {
			t.Errorf("%s: %q → %q: nothing hidden", name, in, got)
		}
		low := strings.ToLower(got)
		for _, leak := range []string{strings.ToLower(key), strings.ToLower(url.QueryEscape(key)), "zq9", "abcdefghijkl", "abcdefghijklmnopqrst"} {
			if strings.Contains(low, leak) {
				t.Errorf("%s: %q → %q still holds %q", name, in, got, leak)
			}
		}
	}
	if got := r.String("a short word"); got != "a short word" {
		t.Errorf("a value shorter than MinLen was hidden: %q", got)
	}
}

func TestMessageHidesFields(t *testing.T) {
	t.Parallel()
	var r *redact.Redactor // nil knows no values
	got := r.Message(`401: x-api-key: abc123secret, password=hunter22; key: visible`)
	want := `401: x-api-key: [REDACTED], password=[REDACTED]; key: [REDACTED]`
	if got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	if got := r.String("key: visible"); got != "key: visible" {
		t.Errorf("String hid a field: %q", got)
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	r := redact.FromEnv([]string{
		"OPENAI_API_KEY=sk-live-value-1234",
		"GITHUB_TOKEN=gh-token-value-5678",
		"PGPASSWORD=pg-password-value",
		"MY_LLM_CRED=named-in-config-99",
		"HOME=/home/someone-long",
		"REIN_IDEMPOTENCY_KEY=run-0123/step/1",
		"REIN_DB=postgres://rein:db-pass-4321@db/rein",
		"OTHER_DSN=host=db password='kv pass 77' user=rein",
	}, "MY_LLM_CRED")
	for _, secret := range []string{"sk-live-value-1234", "gh-token-value-5678", "pg-password-value", "named-in-config-99", "db-pass-4321", "kv pass 77"} {
		if got := r.String("x " + secret + " y"); strings.Contains(got, secret) {
			t.Errorf("%q not hidden: %q", secret, got)
		}
	}
	for _, plain := range []string{"/home/someone-long", "run-0123/step/1"} {
		if got := r.String(plain); got != plain {
			t.Errorf("%q hidden: %q", plain, got)
		}
	}
}

func TestDSN(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://rein:s3cret@db:5432/rein":                          "postgres://rein:xxxxx@db:5432/rein",
		"postgres://rein@db/rein?password=s3cret&sslmode=disable":      "postgres://rein@db/rein?password=xxxxx&sslmode=disable",
		"postgresql://db/rein?sslpassword=k3y&user=rein":               "postgresql://db/rein?sslpassword=xxxxx&user=rein",
		"host=db password=s3cret user=rein":                            "host=db password=xxxxx user=rein",
		"host=db password='s3 cret' user=rein":                         "host=db password=xxxxx user=rein",
		"postgres://rein:p@ss:w@rd@db/rein":                            "postgres://rein:xxxxx@db/rein",
		"postgres://rein@db/rein":                                      "postgres://rein@db/rein",
		".rein/rein.db":                                                ".rein/rein.db",
		":memory:":                                                     ":memory:",
		"file:/tmp/r.db?_pragma=busy_timeout(5000)":                    "file:/tmp/r.db?_pragma=busy_timeout(5000)",
		"postgres://u:pw%2Fx@h/d?application_name=rein&password=again": "postgres://u:xxxxx@h/d?application_name=rein&password=xxxxx",
	} {
		if got := redact.DSN(in); got != want {
			t.Errorf("DSN(%q) = %q, want %q", in, got, want)
		}
	}
	got := redact.Passwords("postgres://u:pw%2Fx@h/d?password=q1")
	if len(got) != 2 || got[0] != "pw/x" || got[1] != "q1" {
		t.Errorf("Passwords = %q", got)
	}
}

// Bytes returns what it was given, without allocating, when there is
// nothing to hide (the engine runs every stored payload through it), and a
// copy when there is (the caller's bytes stay as they were).
func TestBytesCopiesOnlyWhatItHides(t *testing.T) {
	// Not parallel: it counts allocations.
	r := redact.New("Secret-Value-0123456789")
	clean := []byte(`{"id": 42, "Name": "Ada Lovelace", "note": "nothing to hide here, SK and all"}`)
	if n := testing.AllocsPerRun(100, func() { _ = r.Bytes(clean) }); n != 0 {
		t.Errorf("Bytes of clean text allocates %v times", n)
	}
	if got := r.Bytes(clean); &got[0] != &clean[0] {
		t.Error("Bytes of clean text returned a copy")
	}
	dirty := []byte(`{"token": "secret-value-0123456789", "auth": "Bearer abcdefgh123"}`)
	keep := string(dirty)
	got := string(r.Bytes(dirty))
	if string(dirty) != keep {
		t.Errorf("Bytes changed its argument: %s", dirty)
	}
	if want := `{"token": "[REDACTED]", "auth": "Bearer [REDACTED]"}`; got != want {
		t.Errorf("Bytes = %s, want %s", got, want)
	}
}

// Cut hides the start of a secret that a preview's cut left before its
// ellipsis, in any case, and leaves a text that ends otherwise alone.
func TestCutHidesASecretCutShort(t *testing.T) {
	t.Parallel()
	r := redact.New("Secret-Value-0123456789")
	for in, want := range map[string]string{
		`{"token":"SECRET-Val…`:               `{"token":"[REDACTED]…`,
		`{"token":"secret-value-0123456789"}`: `{"token":"[REDACTED]"}`,
		`{"token":"Sec…`:                      `{"token":"[REDACTED]…`,
		`{"token":"Se…`:                       `{"token":"Se…`,
		`{"note":"nothing here…`:              `{"note":"nothing here…`,
		`{"token":"SECRET-Val`:                `{"token":"SECRET-Val`,
	} {
		if got := r.Cut(in); got != want {
			t.Errorf("Cut(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRedactRepetitiveInputIsFast runs the redactor over 800 KB of one
// letter (and of a letter and a space), which took 5 to 19 s when the
// search for "bearer" or for a secret rescanned the rest of the text at
// every "b". The scan is linear (FuzzScanFoldLinear counts its steps, which
// noise cannot move); here the time of 800 KB is held to that of 200 KB:
// a linear scan takes about 4 times as long, a quadratic one 16 times.
// Each size is the best of three runs, measured alternately, and a case
// fails only when three such rounds all read non-linear: a loaded machine
// stalls one round, a quadratic scan loses every one. Not parallel, so the
// package's other tests do not share its cores.
func TestRedactRepetitiveInputIsFast(t *testing.T) {
	run := func(r *redact.Redactor, in string) time.Duration {
		start := time.Now()
		if got := r.Message(in); got != in {
			t.Fatalf("Message changed %d bytes of %q…", len(in), in[:4])
		}
		return time.Since(start)
	}
	for _, r := range []*redact.Redactor{nil, redact.New("bbbbbbbbbbbbx"), redact.New(strings.Repeat("b", 200) + "x")} {
		for _, unit := range []string{"b", "b ", "B"} {
			smallIn, largeIn := strings.Repeat(unit, (200<<10)/len(unit)), strings.Repeat(unit, (800<<10)/len(unit))
			var small, large time.Duration
			linear := false
			for round := 0; round < 3 && !linear; round++ {
				small, large = time.Duration(1<<63-1), time.Duration(1<<63-1)
				for range 3 {
					small, large = min(small, run(r, smallIn)), min(large, run(r, largeIn))
				}
				linear = large <= 8*small+100*time.Millisecond
			}
			if !linear {
				t.Errorf("Message over 800 KB of %q took %s, over 200 KB %s (best of 3, in each of 3 rounds): not linear", unit, large, small)
			}
		}
	}
}

// A secret is hidden in hex (either case), in base64 wherever it starts in
// a longer encoded text (both alphabets), and JSON-escaped twice, as an
// agent's tool arguments are inside its transcript.
func TestSecretInEveryEncoding(t *testing.T) {
	t.Parallel()
	const secret = `pa"ss\word-0123+/?~xyz`
	r := redact.New(secret)
	once, _ := json.Marshal(map[string]string{"password": secret})
	twice, _ := json.Marshal(map[string]string{"args": string(once)})
	cases := map[string]string{
		"hex":          "dump " + hex.EncodeToString([]byte(secret)) + " end",
		"HEX":          "dump " + strings.ToUpper(hex.EncodeToString([]byte(secret))) + " end",
		"json twice":   string(twice),
		"url-escaped":  url.QueryEscape(secret),
		"base64 alone": base64.StdEncoding.EncodeToString([]byte(secret)),
	}
	for shift := 0; shift < 3; shift++ {
		for _, tail := range []string{"", "!", "?!", "and more after it"} {
			text := []byte(strings.Repeat("x", shift) + secret + tail)
			for name, enc := range map[string]*base64.Encoding{"std": base64.StdEncoding, "url": base64.URLEncoding, "raw": base64.RawStdEncoding} {
				cases[fmt.Sprintf("base64 %s at offset %d before %q", name, shift, tail)] = "Basic " + enc.EncodeToString(text)
			}
		}
	}
	for name, text := range cases {
		if got := r.String(text); !strings.Contains(got, redact.Mask) || !r.Finds(text) {
			t.Errorf("%s: %q is not hidden: %q", name, text, got)
		}
	}
}
