package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/temporal"
)

// TestRunsUsage: rein runs show|list|cancel --temporal refuse a wrong
// command line with exit 2 and what to give, before dialling anything.
func TestRunsUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		errHas string
	}{
		{[]string{"runs", "show", "--temporal", "h:1"}, "rein runs show --temporal takes RUN"},
		{[]string{"runs", "show", "r1", "r2", "--temporal", "h:1"}, "takes RUN"},
		{[]string{"runs", "show", "r1", "--temporal", "h:1", "-o", "yaml"}, "-o yaml: give text or json"},
		{[]string{"runs", "show", "r1"}, "--temporal HOSTPORT is required"},
		{[]string{"runs", "show", "r1", "--temporal"}, "flag needs an argument"},
		{[]string{"runs", "list", "extra", "--temporal", "h:1"}, "takes no arguments"},
		{[]string{"runs", "list", "--temporal", "h:1", "--flow", "a' OR 'x'='x"}, `--flow "a' OR 'x'='x": a quote or backslash at byte 1`},
		{[]string{"runs", "list", "--temporal", "h:1", "--limit", "0"}, "--limit must be positive"},
		{[]string{"runs", "list", "--temporal", "h:1", "--since", "1h"}, "flag provided but not defined: -since"},
		{[]string{"runs", "cancel", "--temporal", "h:1"}, "rein runs cancel --temporal takes RUN"},
		{[]string{"runs", "cancel", "r1"}, "--temporal HOSTPORT is required"},
		{[]string{"runs", "resume", "r1", "--temporal", "h:1"}, "show, list, cancel, approve"},
		{[]string{"runs"}, "needs show, list, cancel"},
		{[]string{"sessions", "list", "--temporal", "h:1"}, "runs show|list|cancel|approve"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), c.args, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.errHas) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", c.args, code, errb.String(), exitUsage, c.errHas)
		}
		if out.Len() != 0 {
			t.Errorf("%q: stdout %q, want none", c.args, out.String())
		}
	}
}

// TestListQuery: the list flags become a visibility query on rein's
// search attributes, joined by AND; none selects every run.
func TestListQuery(t *testing.T) {
	for _, c := range []struct {
		o    temporal.ListOptions
		want string
	}{
		{temporal.ListOptions{}, ""},
		{temporal.ListOptions{Flow: "resume-screen"}, "ReinFlow = 'resume-screen'"},
		{temporal.ListOptions{Flow: "f", Status: "waiting", Tenant: "acme"}, "ReinFlow = 'f' AND ReinStatus = 'waiting' AND ReinTenant = 'acme'"},
	} {
		got, err := temporal.ListQuery(c.o)
		if err != nil || got != c.want {
			t.Errorf("ListQuery(%+v) = %q, %v; want %q", c.o, got, err, c.want)
		}
	}
	if _, err := temporal.ListQuery(temporal.ListOptions{Tenant: `a\b`}); err == nil || !strings.Contains(err.Error(), "--tenant") {
		t.Errorf("a backslash in --tenant: %v", err)
	}
}
