package otel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/trace"
	reinotel "github.com/reinhq/rein/trace/otel"
)

// Without OTEL_EXPORTER_OTLP_ENDPOINT nothing is set up.
func TestSetupOffWithoutEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tel, err := reinotel.Setup(context.Background(), nil)
	if tel != nil || err != nil {
		t.Fatalf("Setup without an endpoint: %v, %v", tel, err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// With OTEL_EXPORTER_OTLP_ENDPOINT, a run's spans reach a collector as
// OTLP/HTTP protobuf once Shutdown flushes them, under service.name rein
// (OTEL_SERVICE_NAME overrides it).
func TestSetupExportsOTLP(t *testing.T) {
	var mu sync.Mutex
	var names []string
	var service, contentType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		contentType = r.Header.Get("Content-Type")
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.Resource.Attributes {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "rein-test")
	tel, err := reinotel.Setup(context.Background(), nil)
	if err != nil || tel == nil {
		t.Fatalf("Setup: %v, %v", tel, err)
	}
	if res := run(t, tel.Sink, twoSteps); res.Status != trace.RunSucceeded {
		t.Fatalf("run %+v", res)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(names)
	want := []string{"chat openai/gpt-4o-mini", "chat openai/gpt-4o-mini", "execute_tool echo", "execute_tool echo", "invoke_agent helper", "invoke_workflow orders", "step fetch"}
	if !slices.Equal(names, want) || service != "rein-test" || contentType != "application/x-protobuf" {
		t.Fatalf("collector got spans %q of service %q as %q, want %q of rein-test as protobuf", names, service, contentType, want)
	}
}

// A protocol other than http/protobuf is refused with what to do.
func TestSetupRefusesGRPC(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if _, err := reinotel.Setup(context.Background(), nil); err == nil {
		t.Fatal("Setup took OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	}
}
