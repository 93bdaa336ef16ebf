package otel_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
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

// grpcCollector is an OTLP trace collector over gRPC on loopback: the
// standard TraceService on a grpc.Server, keeping the spans' names and the
// resource's service.name.
type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu      sync.Mutex
	names   []string
	service string
}

func (c *grpcCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.Resource.Attributes {
			if kv.Key == "service.name" {
				c.service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// With OTEL_EXPORTER_OTLP_PROTOCOL=grpc (or the traces-only variable,
// which wins), a run's spans reach a gRPC collector once Shutdown flushes
// them.
func TestSetupExportsOTLPOverGRPC(t *testing.T) {
	for _, env := range [][2]string{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"},
	} {
		t.Run(env[0], func(t *testing.T) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			col := &grpcCollector{}
			srv := grpc.NewServer()
			coltracepb.RegisterTraceServiceServer(srv, col)
			go func() { _ = srv.Serve(lis) }()
			defer srv.Stop()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String()) // http: no TLS
			t.Setenv("OTEL_SERVICE_NAME", "rein-grpc")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
			t.Setenv(env[0], env[1])
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
			col.mu.Lock()
			defer col.mu.Unlock()
			slices.Sort(col.names)
			want := []string{"chat openai/gpt-4o-mini", "chat openai/gpt-4o-mini", "execute_tool echo", "execute_tool echo", "invoke_agent helper", "invoke_workflow orders", "step fetch"}
			if !slices.Equal(col.names, want) || col.service != "rein-grpc" {
				t.Fatalf("gRPC collector got spans %q of service %q, want %q of rein-grpc", col.names, col.service, want)
			}
		})
	}
}

// A protocol other than http/protobuf and grpc is refused, naming the
// variable and what to set.
func TestSetupRefusesOtherProtocols(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json: rein does not export traces as OTLP JSON; set it to http/protobuf (the default) or grpc"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json: rein does not export traces as OTLP JSON"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "thrift", `OTEL_EXPORTER_OTLP_PROTOCOL="thrift": not an OTLP protocol rein exports over; set it to http/protobuf (the default) or grpc`},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
			t.Setenv(tc.name, tc.value)
			tel, err := reinotel.Setup(context.Background(), nil)
			if err == nil || tel != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Setup with %s=%s: %v, %v; want an error saying %q", tc.name, tc.value, tel, err, tc.want)
			}
		})
	}
}
