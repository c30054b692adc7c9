package gather_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/internal/gather"
	"github.com/quarrysearch/quarry/internal/natstest"
)

// Replies hands on every answer that comes within its wait, from any
// number of responders, and none that comes after it.
func TestGather(t *testing.T) {
	srv := natstest.Start(t)
	for _, name := range []string{"a", "b", "c"} {
		nc := srv.Conn(t, name)
		if _, err := nc.Subscribe("who", func(m *nats.Msg) {
			if name == "c" {
				time.Sleep(300 * time.Millisecond) // too late
			}
			_ = m.Respond(append([]byte(name), m.Data...))
		}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	start := time.Now()
	if err := gather.Replies(context.Background(), srv.NC, "who", []byte("?"), 150*time.Millisecond, func(m *nats.Msg) {
		got = append(got, string(m.Data))
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a?", "b?"}) {
		t.Fatalf("answers %q, want a? and b?", got)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("returned after %s, before its wait", took)
	}
	// A context that ends first ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	_ = gather.Replies(ctx, srv.NC, "who", nil, time.Minute, func(*nats.Msg) {})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("waited %s past its context", took)
	}
}
