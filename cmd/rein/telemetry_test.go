package main

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"
)

// TestCommandsExportSpans: with OTEL_EXPORTER_OTLP_ENDPOINT set, rein
// agent's spans reach the collector (OTLP/HTTP protobuf) by the time the
// command returns; without it nothing is sent.
func TestCommandsExportSpans(t *testing.T) {
	// not parallel: it sets the environment rein reads.
	url, spans := spanCollector(t)
	task := []string{"agent", "testdata/chat", "remember: the password is swordfish", "--db", filepath.Join(t.TempDir(), "rein.db")}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	if code, out, stderr := cli(t, task...); code != exitOK || len(spans()) != 0 {
		t.Fatalf("without an endpoint: exit %d, spans %v: %s\n%s", code, spans(), stderr, out)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
	task[len(task)-1] = filepath.Join(t.TempDir(), "rein.db")
	if code, out, stderr := cli(t, task...); code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	names := slices.Sorted(maps.Keys(spans()))
	if want := []string{"chat notes-model", "invoke_agent notes", "invoke_workflow notes"}; !slices.Equal(names, want) {
		t.Fatalf("the collector got %q, want %q", names, want)
	}
}
