package tracenats

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/trace"
)

// TestPropagation: the request id always crosses a NATS hop; the span
// context only when tracing is on, and then as the remote parent.
func TestPropagation(t *testing.T) {
	ctx := requestid.With(context.Background(), "req-1")
	h := nats.Header{}
	Inject(ctx, h)
	if h.Get(requestid.Header) != "req-1" || h.Get("traceparent") != "" {
		t.Fatalf("tracing off: headers %v", h)
	}
	if _, span := trace.Start(ctx, "x"); span.SpanContext().IsValid() {
		t.Fatal("tracing off, yet a real span")
	}

	tp := sdktrace.NewTracerProvider()
	trace.Use(tp)
	defer trace.Use(nil)
	ctx, span := trace.Start(ctx, "parent")
	defer span.End()
	h = nats.Header{}
	Inject(ctx, h)
	got := Extract(context.Background(), h)
	if requestid.From(got) != "req-1" {
		t.Fatalf("request id %q after the hop", requestid.From(got))
	}
	sc := oteltrace.SpanContextFromContext(got)
	if !sc.IsRemote() || sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("remote span context %v, want the parent's %v", sc, span.SpanContext())
	}
}

// FuzzExtract: any header values give a usable context, never a panic,
// and never an invalid request id.
func FuzzExtract(f *testing.F) {
	f.Add("req-1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("bad id\n", "garbage")
	f.Fuzz(func(t *testing.T, id, parent string) {
		trace.Use(sdktrace.NewTracerProvider())
		defer trace.Use(nil)
		h := nats.Header{}
		h.Set(requestid.Header, id)
		h.Set("traceparent", parent)
		ctx := Extract(context.Background(), h)
		if got := requestid.From(ctx); got != "" && !requestid.Valid(got) {
			t.Fatalf("invalid request id %q accepted", got)
		}
	})
}
