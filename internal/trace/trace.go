// Package trace carries a search request's identity across Quarry's
// services: a request id (package requestid) in every log line about
// the request, and
// OpenTelemetry spans for each stage, so that one slow query can be
// followed from the broker to the searchers and the plugins. Package
// tracenats carries both over NATS headers; this package knows nothing of
// NATS, so the plugin host can use it.
//
// Spans are off unless Setup installs an exporter (or a test installs a
// provider with Use): then Enabled is false and the hot path starts no
// span and allocates nothing for tracing.
package trace

import (
	"context"
	"log/slog"
	"sync/atomic"

	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/quarrysearch/quarry/internal/requestid"
)

// Logger returns log with ctx's request id as the request_id attribute.
func Logger(ctx context.Context, log *slog.Logger) *slog.Logger {
	if id := requestid.From(ctx); id != "" {
		return log.With("request_id", id)
	}
	return log
}

var (
	enabled  atomic.Bool
	provider atomic.Pointer[providerHolder]
	noTracer = noop.NewTracerProvider().Tracer("")
)

type providerHolder struct{ tracer oteltrace.Tracer }

// instrumentation names Quarry's spans.
const instrumentation = "github.com/quarrysearch/quarry"

// Use makes tp the provider of Quarry's spans (nil: none, spans off).
// Setup calls it; tests use it with an in-memory exporter.
func Use(tp oteltrace.TracerProvider) {
	if tp == nil {
		enabled.Store(false)
		provider.Store(nil)
		return
	}
	provider.Store(&providerHolder{tracer: tp.Tracer(instrumentation)})
	enabled.Store(true)
}

// Enabled reports whether spans are recorded.
func Enabled() bool { return enabled.Load() }

func tracer() oteltrace.Tracer {
	if h := provider.Load(); h != nil {
		return h.tracer
	}
	return noTracer
}

// Start starts a span when tracing is enabled; otherwise it returns ctx
// and a no-op span, allocating nothing.
func Start(ctx context.Context, name string, opts ...oteltrace.SpanStartOption) (context.Context, oteltrace.Span) {
	if !enabled.Load() {
		return ctx, oteltrace.SpanFromContext(ctx)
	}
	return tracer().Start(ctx, name, opts...)
}
