// Package tracenats carries a request's id and span context (package
// trace) in NATS message headers: Quarry-Request-Id and W3C traceparent.
package tracenats

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"

	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/trace"
)

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

// Propagate adds ctx's span context to h when tracing is on: the Go
// client's Options.Propagate, so the client itself links no tracer.
func Propagate(ctx context.Context, h nats.Header) {
	if trace.Enabled() {
		propagator.Inject(ctx, headerCarrier(h))
	}
}

// Inject writes ctx's request id and, when tracing, its span context into
// a NATS message's headers and returns them: h, or a new header when h is
// nil and there is something to write (nil otherwise, so a message with
// nothing to carry costs no header).
func Inject(ctx context.Context, h nats.Header) nats.Header {
	id := requestid.From(ctx)
	if id == "" && !trace.Enabled() {
		return h
	}
	if h == nil {
		h = nats.Header{}
	}
	if id != "" {
		h.Set(requestid.Header, id)
	}
	if trace.Enabled() {
		propagator.Inject(ctx, headerCarrier(h))
	}
	return h
}

// Extract returns ctx with the request id and, when tracing, the remote
// span context a NATS message's headers carry.
func Extract(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	if id := h.Get(requestid.Header); requestid.Valid(id) {
		ctx = requestid.With(ctx, id)
	}
	if trace.Enabled() {
		ctx = propagator.Extract(ctx, headerCarrier(h))
	}
	return ctx
}
