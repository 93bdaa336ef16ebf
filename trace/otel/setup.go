package otel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Enabled reports whether the environment asks for an OTLP export of
// traces: OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is set (and OTEL_TRACES_EXPORTER is not "none").
func Enabled() bool {
	if os.Getenv("OTEL_TRACES_EXPORTER") == "none" || os.Getenv("OTEL_SDK_DISABLED") == "true" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Telemetry is an OTLP export of a process's spans: the Sink to hand a
// Client, and Shutdown to flush and stop it on exit.
type Telemetry struct {
	Sink     *Sink
	provider *sdktrace.TracerProvider
}

// Setup returns the Telemetry the environment asks for, or nil when
// Enabled is false (nothing is exported, nothing is linked in at run
// time). The exporter is OTLP over HTTP with protobuf bodies
// (otlptracehttp), configured by the standard OTEL_EXPORTER_OTLP_*
// variables (endpoint, headers, timeout, TLS); the resource by
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, with service.name
// "rein" by default. Setup also installs the provider and the W3C trace
// context propagator as the process's globals, which rein's MCP client
// and server use for their tools/call spans and params._meta.traceparent.
// An OTEL_EXPORTER_OTLP_PROTOCOL other than http/protobuf is an error.
func Setup(ctx context.Context, opts *Options) (*Telemetry, error) {
	if !Enabled() {
		return nil, nil
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: rein exports traces over http/protobuf only; unset it or set it to http/protobuf", proto)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: the OTLP exporter (OTEL_EXPORTER_OTLP_*): %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "rein")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OpenTelemetry: the resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return &Telemetry{Sink: New(tp, opts), provider: tp}, nil
}

// Provider is the tracer provider the Telemetry exports from.
func (t *Telemetry) Provider() oteltrace.TracerProvider { return t.provider }

// Shutdown ends the spans of runs still open (a process interrupted or
// leaving runs to others), then flushes every span to the collector and
// stops the exporter, waiting at most until ctx ends (and 5 s). A nil
// Telemetry does nothing.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.Sink.Close(time.Now())
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("OpenTelemetry: flushing the spans to the collector: %w", err)
	}
	return nil
}
