package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestCommandsExportSpans: with OTEL_EXPORTER_OTLP_ENDPOINT set, rein
// agent's spans reach the collector (OTLP/HTTP protobuf) by the time the
// command returns; without it nothing is sent.
func TestCommandsExportSpans(t *testing.T) {
	// not parallel: it sets the environment rein reads.
	var mu sync.Mutex
	var names []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
	}))
	defer srv.Close()
	task := []string{"agent", "testdata/chat", "remember: the password is swordfish", "--db", filepath.Join(t.TempDir(), "rein.db")}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	if code, out, stderr := cli(t, task...); code != exitOK || len(names) != 0 {
		t.Fatalf("without an endpoint: exit %d, spans %q: %s\n%s", code, names, stderr, out)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	task[len(task)-1] = filepath.Join(t.TempDir(), "rein.db")
	if code, out, stderr := cli(t, task...); code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(names)
	if want := []string{"chat notes-model", "invoke_agent notes", "invoke_workflow notes"}; !slices.Equal(names, want) {
		t.Fatalf("the collector got %q, want %q", names, want)
	}
}
