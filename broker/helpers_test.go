package broker

import (
	"context"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/natstest"
)

// startStore starts a NATS server with JetStream on a temp dir and opens
// Quarry's JetStream resources on it; the context ends with the test, a
// minute at most.
func startStore(t *testing.T) (*natstest.Server, *meta.Store, context.Context) {
	t.Helper()
	s := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	store, err := meta.Open(ctx, s.JS, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, store, ctx
}

// startBroker starts a broker with cfg on s and store, running until the
// test ends (its Run must then return no error), and waits until it is
// ready.
func startBroker(t *testing.T, s *natstest.Server, store *meta.Store, ctx context.Context, cfg Config) *Broker {
	t.Helper()
	b, err := New(s.Conn(t, "broker"), store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- b.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-b.Ready():
	case err := <-ran:
		t.Fatal(err)
	}
	return b
}
