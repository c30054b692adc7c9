// Package trace carries a search request's identity across Quarry's
// services: a request id in every log line about the request, and
// OpenTelemetry spans for each stage, propagated in NATS headers, so that
// one slow query can be followed from the broker to the searchers and the
// plugins.
//
// Spans are off unless Setup installs an exporter (or a test installs a
// provider with Use): then Enabled is false and the hot path starts no
// span and allocates nothing for tracing.
package trace

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/propagation"
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
func NewRequestID() string { return nuid.Next() }

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

// propagator writes and reads W3C trace context (traceparent).
var propagator = propagation.TraceContext{}

// headerCarrier adapts nats.Header to the propagation API.
type headerCarrier nats.Header

func (h headerCarrier) Get(k string) string { return nats.Header(h).Get(k) }
func (h headerCarrier) Set(k, v string)     { nats.Header(h).Set(k, v) }
func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// Inject writes ctx's request id and, when tracing, its span context into
// a NATS message's headers.
func Inject(ctx context.Context, h nats.Header) {
	if id := RequestID(ctx); id != "" {
		h.Set(HeaderRequestID, id)
	}
	if enabled.Load() {
		propagator.Inject(ctx, headerCarrier(h))
	}
}

// Extract returns ctx with the request id and, when tracing, the remote
// span context a NATS message's headers carry.
func Extract(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	if id := h.Get(HeaderRequestID); ValidRequestID(id) {
		ctx = WithRequestID(ctx, id)
	}
	if enabled.Load() {
		ctx = propagator.Extract(ctx, headerCarrier(h))
	}
	return ctx
}
