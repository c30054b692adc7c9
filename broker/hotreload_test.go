package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/internal/subject"
)

// With WaitForPipelines, a broker takes no search before its pipelines are
// live: its queue group has no member (no responders) until then.
func TestBrokerJoinsAfterPipelines(t *testing.T) {
	s, store, ctx := startStore(t)
	b, err := New(s.Conn(t, "broker"), store, Config{WaitForPipelines: true})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- b.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	nc := s.Conn(t, "client")
	search := func() error {
		_, err := nc.Request(subject.SearchPrefix+".menu", []byte(`{"q":"x"}`), 2*time.Second)
		return err
	}
	for range 5 { // the index watch is done within these
		if err := search(); !errors.Is(err, nats.ErrNoResponders) {
			t.Fatalf("a search before the pipelines are live: %v, want no responders", err)
		}
		time.Sleep(20 * time.Millisecond) // nothing to wait for: the broker must stay out
	}
	b.pipelinesReadyOnce()
	<-b.Ready()
	if err := search(); err != nil {
		t.Fatalf("a search once the pipelines are live: %v", err)
	}
}
