package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Pauses double from First to Max and stay there; a context that ends
// cuts a pause short with its error.
func TestBackoff(t *testing.T) {
	b := New(50*time.Millisecond, 300*time.Millisecond)
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
	}
	want := []time.Duration{50, 100, 200, 300, 300}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("pauses %v, want %v ms", got, want)
		}
	}
	start := time.Now()
	if err := New(time.Millisecond, time.Millisecond).Wait(context.Background()); err != nil || time.Since(start) < time.Millisecond {
		t.Fatalf("wait: %v after %s", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start = time.Now()
	if err := New(time.Hour, time.Hour).Wait(ctx); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("wait with an ended context: %v after %s", err, time.Since(start))
	}
}
