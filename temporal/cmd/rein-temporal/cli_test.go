package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataArg: submit's --data is a JSON text or @FILE; what is not JSON
// is refused with where it breaks, and an absent one says what to give.
func TestDataArg(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.json")
	if err := os.WriteFile(file, []byte(`{"total": 10}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want, errHas string }{
		{`{"total":10}`, `{"total":10}`, ""},
		{"@" + file, `{"total": 10}`, ""},
		{`{"total":}`, "", "not JSON at byte 10"},
		{"", "", "needs --data"},
		{"@" + file + ".missing", "", "no such file"},
	} {
		got, err := dataArg(c.in)
		if c.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("dataArg(%q) = %s, %v; want an error with %q", c.in, got, err, c.errHas)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("dataArg(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// TestFlagsBeforeDial: what the --temporal commands check before they
// reach a server, against an address where none listens: a bad
// --log-level is bad usage; settle takes its output as --value, or as
// --output (its earlier name) when that is not text or json, and a
// settle without JSON is refused before dialing; a server that cannot be
// reached is named in the error.
func TestFlagsBeforeDial(t *testing.T) {
	const addr = "127.0.0.1:1"
	run := func(args ...string) (int, string) {
		t.Helper()
		var out, errs bytes.Buffer
		code := Main(context.Background(), append(args, "--temporal", addr), &out, &errs)
		return code, errs.String()
	}
	if code, errs := run("runs", "show", "r", "--log-level", "loud"); code != exitUsage || !strings.Contains(errs, `--log-level "loud": want debug, info, warn or error`) {
		t.Errorf("a bad --log-level: exit %d, %s", code, errs)
	}
	if code, errs := run("runs", "settle", "r", "s", "--value", "not json"); code != exitUsage || !strings.Contains(errs, "needs --value JSON") {
		t.Errorf("settle --value without JSON: exit %d, %s", code, errs)
	}
	if code, errs := run("runs", "settle", "r", "s", "--output", "json"); code != exitUsage || !strings.Contains(errs, "needs --value JSON") {
		t.Errorf("settle --output json (the format) without --value: exit %d, %s", code, errs)
	}
	for _, args := range [][]string{
		{"runs", "settle", "r", "s", "--output", `{"ok":true}`}, // the earlier name of --value
		{"runs", "settle", "r", "s", "--value", `{"ok":true}`, "--output", "json"},
		{"runs", "show", "r", "--output", "json"},
	} {
		if _, errs := run(args...); !strings.Contains(errs, "the Temporal server at "+addr+" (namespace default)") {
			t.Errorf("%v: %s, want the server it could not reach named", args, errs)
		}
	}
}

// TestRunsNotOnTemporal: a local runs command with no --temporal form is
// a usage error (exit 2) that lists those that have one and says what
// stands in for it on Temporal; it never dials.
func TestRunsNotOnTemporal(t *testing.T) {
	for action, want := range map[string]string{
		"resume":     "goes on by itself while a worker serves its task queue",
		"why":        "rein runs effects RUN --temporal",
		"impact":     "not yet on Temporal",
		"artifacts":  "--output json holds each step's output",
		"frobnicate": "effects, trace and prune do)",
	} {
		var out, errs bytes.Buffer
		code := Main(context.Background(), []string{"runs", action, "r1", "--temporal", "127.0.0.1:1"}, &out, &errs)
		if code != exitUsage || !strings.Contains(errs.String(), "rein runs "+action+" does not take --temporal") || !strings.Contains(errs.String(), want) {
			t.Errorf("runs %s: exit %d, stderr %q; want exit %d and %q", action, code, errs.String(), exitUsage, want)
		}
	}
}
