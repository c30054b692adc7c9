package trace

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

func TestValidRequestID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"abc-123", true},
		{"", false},
		{"has space", false},
		{"new\nline", false},
		{strings.Repeat("x", MaxRequestIDBytes), true},
		{strings.Repeat("x", MaxRequestIDBytes+1), false},
		{"ünïcode", false},
	} {
		if got := ValidRequestID(c.id); got != c.want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}

// TestPropagation: the request id always crosses a NATS hop; the span
// context only when tracing is on, and then as the remote parent.
func TestPropagation(t *testing.T) {
	ctx := WithRequestID(context.Background(), "req-1")
	h := nats.Header{}
	Inject(ctx, h)
	if h.Get(HeaderRequestID) != "req-1" || h.Get("traceparent") != "" {
		t.Fatalf("tracing off: headers %v", h)
	}
	if _, span := Start(ctx, "x"); span.SpanContext().IsValid() {
		t.Fatal("tracing off, yet a real span")
	}

	tp := sdktrace.NewTracerProvider()
	Use(tp)
	defer Use(nil)
	ctx, span := Start(ctx, "parent")
	defer span.End()
	h = nats.Header{}
	Inject(ctx, h)
	got := Extract(context.Background(), h)
	if RequestID(got) != "req-1" {
		t.Fatalf("request id %q after the hop", RequestID(got))
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
		Use(sdktrace.NewTracerProvider())
		defer Use(nil)
		h := nats.Header{}
		h.Set(HeaderRequestID, id)
		h.Set("traceparent", parent)
		ctx := Extract(context.Background(), h)
		if got := RequestID(ctx); got != "" && !ValidRequestID(got) {
			t.Fatalf("invalid request id %q accepted", got)
		}
	})
}
