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
