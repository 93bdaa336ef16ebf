package redact

import (
	"os"
	"strings"
)

// secretWords mark an environment variable whose value is a secret.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}

// SecretName reports whether an environment variable's name says that its
// value is a secret: it holds KEY, TOKEN, SECRET, PASSWORD, PASSWD
// or CREDENTIAL (in any case), as OPENAI_API_KEY, GITHUB_TOKEN and
// PGPASSWORD do.
func SecretName(name string) bool {
	upper := strings.ToUpper(name)
	if upper == "REIN_IDEMPOTENCY_KEY" {
		return false // rein's own call variable (rein running as a tool): an id, not a secret
	}
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	return false
}

// FromEnv returns a Redactor for the secrets of environ ("NAME=value"
// pairs, as os.Environ returns them): the values of the variables whose
// names SecretName accepts or names lists (the API key variables a
// configuration names, rein.yaml secrets:), and the password of every
// value that is a DSN (REIN_DB, DATABASE_URL).
func FromEnv(environ []string, names ...string) *Redactor {
	var vals []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || val == "" {
			continue
		}
		if SecretName(name) || contains(names, name) {
			vals = append(vals, val)
		}
		vals = append(vals, Passwords(val)...)
	}
	return New(vals...)
}

// Process is FromEnv over the process's environment.
func Process(names ...string) *Redactor { return FromEnv(os.Environ(), names...) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
