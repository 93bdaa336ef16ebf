package otel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
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
// time). The exporter is OTLP, over the protocol
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (else OTEL_EXPORTER_OTLP_PROTOCOL)
// names: http/protobuf, the default (otlptracehttp), or grpc
// (otlptracegrpc); each is configured by the standard OTEL_EXPORTER_OTLP_*
// variables (endpoint, headers, timeout, TLS, compression). The resource
// comes from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, with
// service.name "rein" by default. Setup also installs the provider and the
// W3C trace context propagator as the process's globals, which rein's MCP
// client and server use for their tools/call spans and
// params._meta.traceparent. Any other protocol (http/json among them) is
// an error naming the variable and what to set.
func Setup(ctx context.Context, opts *Options) (*Telemetry, error) {
	if !Enabled() {
		return nil, nil
	}
	exp, err := exporter(ctx)
	if err != nil {
		return nil, err
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

// exporter is the OTLP span exporter of the protocol the environment
// names (see Setup).
func exporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	proto := os.Getenv(name)
	if proto == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		proto = os.Getenv(name)
	}
	var exp sdktrace.SpanExporter
	var err error
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "http/json":
		return nil, fmt.Errorf("%s=http/json: rein does not export traces as OTLP JSON; set it to http/protobuf (the default) or grpc", name)
	default:
		return nil, fmt.Errorf("%s=%.64q: not an OTLP protocol rein exports over; set it to http/protobuf (the default) or grpc", name, proto)
	}
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: the OTLP %s exporter (OTEL_EXPORTER_OTLP_*): %w", cmp.Or(proto, "http/protobuf"), err)
	}
	return exp, nil
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
