package main

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/trace"
	"github.com/reinhq/rein/trace/genai"
	reinotel "github.com/reinhq/rein/trace/otel"
)

// setupTelemetry starts the OpenTelemetry export the environment asks for
// (OTEL_EXPORTER_OTLP_ENDPOINT; trace/otel.Setup) and returns the function
// that flushes it on exit. A bad configuration is a warning: the command
// runs without telemetry rather than not at all.
func (s *streams) setupTelemetry(ctx context.Context) func() {
	tel, err := reinotel.Setup(ctx, &reinotel.Options{Redactor: s.red.red, Provider: s.modelProvider})
	if err != nil {
		fmt.Fprintf(s.err, "rein: warning: no OpenTelemetry export: %v\n", s.red.red.String(err.Error()))
		return func() {}
	}
	if tel == nil {
		return func() {}
	}
	s.tel = tel
	return func() {
		if err := tel.Shutdown(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(s.err, "rein: warning: %v\n", s.red.red.String(err.Error()))
		}
	}
}

// modelProvider is the gen_ai.provider.name of a model name the loaded
// project's rein.yaml models: declares (openai, anthropic, deepseek; an
// OpenAI- or Anthropic-compatible server's API), or "" for the sink's
// default.
func (s *streams) modelProvider(name string) string {
	ps := []*project.Project{s.project.Load()}
	if served := s.served.Load(); served != nil {
		ps = append(ps, (*served)()...)
	}
	for _, p := range ps {
		if p == nil {
			continue
		}
		if pre, ok := p.ModelProvider(name); ok {
			return genai.ProviderOf(pre.Name, pre.API)
		}
	}
	return ""
}

// withTelemetry is sink joined with the OpenTelemetry sink when spans are
// exported: every Client that runs things gets it.
func (s *streams) withTelemetry(sink trace.Sink) trace.Sink {
	if s == nil || s.tel == nil {
		return sink
	}
	return trace.Multi(sink, s.tel.Sink)
}
