package store

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// noneRegistered stands for a program that imports no driver.
func noneRegistered(string) bool { return false }

// TestSchemeOf is the table of what Open makes of a DSN: today's rules
// (postgres:// is PostgreSQL, :memory: and any path SQLite), libpq
// keyword/value DSNs (PostgreSQL, never a file named after the password),
// URIs, and the strings that are neither a path nor a DSN.
func TestSchemeOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dsn, scheme string
		keyword     bool
		err         string // a part of the error; "" when none
	}{
		// today's rules
		{dsn: "postgres://rein:pw@db:5432/rein?sslmode=disable", scheme: "postgres"},
		{dsn: "postgresql://db/rein", scheme: "postgresql"},
		{dsn: "POSTGRES://db/rein", scheme: "postgres"},
		{dsn: ":memory:", scheme: SchemeFile},
		{dsn: "runs.db", scheme: SchemeFile},
		{dsn: ".rein/rein.db", scheme: SchemeFile},
		{dsn: "/var/lib/rein/rein.db?checkpoint=external&synchronous=full", scheme: SchemeFile},
		{dsn: "my runs/rein.db", scheme: SchemeFile},
		{dsn: `C:\rein\rein.db`, scheme: SchemeFile},
		{dsn: "a:b.db", scheme: SchemeFile},
		{dsn: "runs=1.db", scheme: SchemeFile},
		{dsn: "x=1 runs.db", scheme: SchemeFile},
		{dsn: " runs.db", scheme: SchemeFile},
		{dsn: "", err: "empty DSN"},
		// URIs
		{dsn: "file:runs.db", scheme: "file"},
		{dsn: "file:///var/lib/rein/rein.db", scheme: "file"},
		{dsn: "sqlite:runs.db", scheme: "sqlite"},
		{dsn: "mysql://db/rein", scheme: "mysql"},
		{dsn: "postgres:db", scheme: "postgres"},
		{dsn: " postgres://db/rein", err: "spaces around it"},
		{dsn: "postgres://db/rein\n", err: "spaces around it"},
		// libpq keyword/value DSNs
		{dsn: "host=db port=5432 user=rein password=s3cret dbname=rein sslmode=disable", scheme: SchemePostgres, keyword: true},
		{dsn: "host = db  dbname = rein", scheme: SchemePostgres, keyword: true},
		{dsn: "password='a b\\' c' host=/run/postgresql", scheme: SchemePostgres, keyword: true},
		{dsn: "dbname=rein", scheme: SchemePostgres, keyword: true},
		{dsn: "HOST=db PASSWORD=x", scheme: SchemePostgres, keyword: true},
		{dsn: "application_name=w1 search_path=rein host=db", scheme: SchemePostgres, keyword: true},
		{dsn: "pool_max_conns=8 host=db", scheme: SchemePostgres, keyword: true},
		// neither a path nor a DSN
		{dsn: "host=db password=a b", err: "does not parse"},
		{dsn: "host=db password='a b", err: "no closing quote"},
		{dsn: "user=rein 'x", err: "does not parse"},
		{dsn: "foo=1 bar=2", err: "no PostgreSQL keyword"},
		{dsn: "foo = 1", err: "no PostgreSQL keyword"},
		{dsn: "foo=1 bar=2 runs.db", err: "beside other words"},
	} {
		scheme, keyword, err := classify(c.dsn, noneRegistered)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("classify(%q) = %q, %v; want an error saying %q", c.dsn, scheme, err, c.err)
			}
		case err != nil:
			t.Errorf("classify(%q): %v", c.dsn, err)
		case scheme != c.scheme || keyword != c.keyword:
			t.Errorf("classify(%q) = %q, keyword %v; want %q, %v", c.dsn, scheme, keyword, c.scheme, c.keyword)
		}
	}
}

// A scheme is one without "//" only when Open knows it or a driver is
// registered for it; otherwise "name:rest" is a path, as it always was.
func TestSchemeOfRegisteredOpaque(t *testing.T) {
	t.Parallel()
	if s, _, _ := classify("mem:runs", noneRegistered); s != SchemeFile {
		t.Errorf("mem:runs without a mem driver = %q, want a path", s)
	}
	if s, _, _ := classify("mem:runs", func(s string) bool { return s == "mem" }); s != "mem" {
		t.Errorf("mem:runs with a mem driver = %q, want mem", s)
	}
}

// No error of the classifier repeats a value of a key=value DSN: a
// value may be a password that no redactor knows as one.
func TestSchemeOfErrorsHoldNoValue(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"host=db password=Hunter2 x",
		"host=db password=Hunter2 Tail99",
		"pasword=Hunter2 tail=Tail99",
		"host=db password='Hunter2 Tail99",
		"host=db password='Hunter2'Tail99",
	} {
		_, _, err := classify(dsn, noneRegistered)
		if err == nil {
			t.Errorf("classify(%q): no error", dsn)
			continue
		}
		if strings.Contains(err.Error(), "Hunter2") || strings.Contains(err.Error(), "Tail99") {
			t.Errorf("classify(%q): %v repeats a value", dsn, err)
		}
	}
}

// FuzzSchemeOf: the classifier never panics, an empty DSN is its only
// error without a DSN, a DSN it calls keyword/value parses as one with a
// PostgreSQL keyword, one it calls a path holds no libpq keyword's setting
// beside other words, and no error repeats a value of a keyword/value DSN.
func FuzzSchemeOf(f *testing.F) {
	for _, s := range []string{
		"runs.db", ":memory:", "postgres://u:p@h/d", "host=h password='a b' user=u",
		"host=db password=a b", "file:///x.db", "foo=1 bar=2", "a:b", `C:\x`, "x=1 y",
		"password=\\' host=x", "host='", " postgres://x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		if len(dsn) > 4096 {
			return
		}
		scheme, keyword, err := classify(dsn, noneRegistered)
		if err != nil {
			if scheme != "" || keyword {
				t.Fatalf("classify(%q) = %q, %v and error %v", dsn, scheme, keyword, err)
			}
			if !utf8.ValidString(err.Error()) && utf8.ValidString(dsn) {
				t.Errorf("classify(%q): error %q is not UTF-8", dsn, err)
			}
			return
		}
		if dsn == "" {
			t.Fatal("an empty DSN was accepted")
		}
		if keyword {
			keys, perr := parseKeywords(dsn)
			if scheme != SchemePostgres || perr != nil || len(keys) == 0 {
				t.Fatalf("classify(%q) = keyword %q, but parse: %v %v", dsn, scheme, keys, perr)
			}
		}
		if scheme == SchemeFile && len(strings.Fields(dsn)) > 1 {
			for _, f := range strings.Fields(dsn) {
				if k, _, ok := strings.Cut(f, "="); ok && libpqKeys[strings.ToLower(k)] {
					t.Fatalf("classify(%q) = a file, yet it sets %s", dsn, k)
				}
			}
		}
	})
}
