package meta

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/natstest"
)

// Open makes Resources streams (buckets and object stores included),
// each one whose replication Replication reports (and quarry init sets).
func TestOpenMakesResources(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	if _, err := Open(ctx, ns.JS, Options{}); err != nil {
		t.Fatal(err)
	}
	names := ns.JS.StreamNames(ctx)
	n := 0
	known := streamNames()
	for name := range names.Name() {
		n++
		if !slices.Contains(known, name) {
			t.Errorf("stream %s is not among streamNames: its replication is neither adopted nor set", name)
		}
	}
	if names.Err() != nil || n != Resources || len(known) != Resources {
		t.Fatalf("%d streams (%v), %d names known, want meta.Resources, %d", n, names.Err(), len(known), Resources)
	}
}

// TestBindCreatesNothing: a store opened with Bind (the Go client) on a
// deployment without Quarry's resources creates none and says to run
// `quarry init`; once they exist it opens every one of them.
func TestBindCreatesNothing(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	_, err := Open(ctx, ns.JS, Options{Bind: true})
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeUnavailable || !strings.Contains(err.Error(), "quarry init") {
		t.Fatalf("bind before init: %v, want unavailable naming quarry init", err)
	}
	n := 0
	for range ns.JS.StreamNames(ctx).Name() {
		n++
	}
	if n != 0 {
		t.Fatalf("bind made %d streams", n)
	}
	if _, err := Open(ctx, ns.JS, Options{}); err != nil {
		t.Fatal(err)
	}
	st, err := Open(ctx, ns.JS, Options{Bind: true})
	if err != nil {
		t.Fatalf("bind after init: %v", err)
	}
	if st.Indexes == nil || st.Docs == nil || st.Plugins == nil || st.Rejected == nil {
		t.Fatalf("bind left resources unopened: %+v", st)
	}
}

// TestBindWaits: a role (Bind and Wait) started before `quarry init`
// makes nothing, says once in its log what it waits for and why, and is
// open as soon as init has run; without init it gives up when its context
// ends, naming quarry init. With Replicas it checks the deployment's.
func TestBindWaits(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := Open(short, ns.JS, Options{Bind: true, Wait: true, Logger: logger})
	cancel()
	if api.CodeOf(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "was not made within the start-up time") || !strings.Contains(err.Error(), "quarry init") {
		t.Fatalf("a role without init: %v", err)
	}

	opened := make(chan error, 1)
	go func() {
		st, err := Open(ctx, ns.JS, Options{Bind: true, Wait: true, Logger: logger})
		if err == nil && (st.Indexes == nil || st.Rejected == nil) {
			err = errors.New("resources left unopened")
		}
		opened <- err
	}()
	time.Sleep(300 * time.Millisecond) // the role waits
	select {
	case err := <-opened:
		t.Fatalf("the role opened before init: %v", err)
	default:
	}
	if n := strings.Count(log.String(), "waiting for Quarry's resources to be made: run `quarry init`"); n != 2 { // one a start
		t.Fatalf("%d waiting lines, want one a role start:\n%s", n, log.String())
	}
	if _, err := Open(ctx, ns.JS, Options{Replicas: 1, Rescale: true}); err != nil { // quarry init
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("the role after init: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the role did not open within 30 s of init")
	}
	if !strings.Contains(log.String(), "Quarry's resource is made: bound") {
		t.Errorf("no line says the wait is over:\n%s", log.String())
	}
	if _, err := Open(ctx, ns.JS, Options{Bind: true, Wait: true, Replicas: 1}); err != nil {
		t.Fatalf("a role expecting the deployment's replicas: %v", err)
	}
	var re *ReplicasError
	if _, err := Open(ctx, ns.JS, Options{Bind: true, Wait: true, Replicas: 3}); !errors.As(err, &re) {
		t.Fatalf("a role expecting 3 replicas of a deployment at 1: %v, want a ReplicasError", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWaitEndsMidTry: a role that saw its resource missing and whose
// start-up time ends in the middle of its next try (a slow JetStream
// under load) still says it waited for `quarry init`, not that JetStream
// was not ready (CI saw the second under the race detector's load).
func TestWaitEndsMidTry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	tries := 0
	err := (&Options{Bind: true, Wait: true, Logger: slog.New(slog.DiscardHandler)}).open(ctx, "bucket quarry-indexes", func(ctx context.Context) error {
		tries++
		if tries == 1 {
			return jetstream.ErrBucketNotFound
		}
		<-ctx.Done() // the try outlives the start-up time
		return ctx.Err()
	})
	if api.CodeOf(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "was not made within the start-up time") || !strings.Contains(err.Error(), "quarry init") {
		t.Fatalf("%d tries: %v, want unavailable, not made, naming quarry init", tries, err)
	}
}
