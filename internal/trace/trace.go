// Package trace carries a search request's identity across Quarry's
// services: a request id in every log line about the request, and
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
	"crypto/rand"
	"log/slog"
	"sync/atomic"

	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// HeaderRequestID carries a request's id on NATS messages (and
// X-Request-Id over HTTP).
const HeaderRequestID = "Quarry-Request-Id"

// MaxRequestIDBytes caps a request id a caller gives; a longer one is
// replaced.
const MaxRequestIDBytes = 128

type requestIDKey struct{}

// WithRequestID returns ctx carrying a request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns ctx's request id, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// NewRequestID makes a request id.
func NewRequestID() string { return rand.Text() }

// ValidRequestID reports whether a caller's request id can be used as is:
// 1 to MaxRequestIDBytes printable ASCII characters.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// Logger returns log with ctx's request id as the request_id attribute.
func Logger(ctx context.Context, log *slog.Logger) *slog.Logger {
	if id := RequestID(ctx); id != "" {
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
