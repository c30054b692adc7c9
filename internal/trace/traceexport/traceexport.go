// Package traceexport exports Quarry's spans (package trace) to an
// OpenTelemetry collector over OTLP/HTTP. It is apart from trace, which
// every role and the client import, so that the exporter and what it
// pulls in (grpc, protobuf) are linked only into the processes that
// export: the quarry commands.
package traceexport

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/quarrysearch/quarry/internal/trace"
)

// Config configures span export. The zero value exports nothing.
type Config struct {
	// Endpoint is an OTLP/HTTP collector URL, e.g.
	// http://localhost:4318 (empty: no spans).
	Endpoint string
	// SampleRatio is the share of requests traced, 0 to 1 (default 1
	// when an endpoint is set). A request whose caller sent a sampled
	// trace context is always traced.
	SampleRatio float64
	// Service names the process in the spans (e.g. quarry-broker).
	Service string
}

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	if c.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("trace endpoint must be an http(s) URL of an OTLP collector, got %q", c.Endpoint)
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("trace sample ratio must be between 0 and 1, got %g", c.SampleRatio)
	}
	if c.SampleRatio == 0 {
		c.SampleRatio = 1
	}
	if c.Service == "" {
		c.Service = "quarry"
	}
	return nil
}

// Setup starts exporting spans to cfg.Endpoint over OTLP/HTTP and returns
// the function that flushes and stops it. With no endpoint it does
// nothing.
func Setup(ctx context.Context, cfg Config) (shutdown func(context.Context) error, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Endpoint == "" {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", cfg.Service))),
	)
	trace.Use(tp)
	return func(ctx context.Context) error {
		trace.Use(nil)
		return errors.Join(tp.Shutdown(ctx))
	}, nil
}
