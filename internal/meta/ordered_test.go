package meta

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// An Ordered follower whose consumer is deleted under it (as when the
// cluster member holding it goes down) makes it again and goes on after
// the last message it passed on: every message once, in stream order, one
// handler call at a time, even with a slow handler.
func TestOrderedSurvivesLostConsumer(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	if _, err := ns.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "ORD", Subjects: []string{"ord.>"}}); err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := ns.JS.Publish(ctx, fmt.Sprintf("ord.%d", i%3), []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(0, 200)
	var mu sync.Mutex
	var got []uint64
	inHandler := 0
	overlap := false
	ord, info, err := NewOrdered(ctx, ns.JS, "ORD", OrderedConfig{DeliverPolicy: jetstream.DeliverAllPolicy, Heartbeat: 500 * time.Millisecond, MaxMessages: 16},
		func(m jetstream.Msg) {
			mu.Lock()
			inHandler++
			overlap = overlap || inHandler > 1
			mu.Unlock()
			time.Sleep(100 * time.Microsecond) // the work of a handler that takes its time
			md, _ := m.Metadata()
			mu.Lock()
			got = append(got, md.Sequence.Stream)
			inHandler--
			mu.Unlock()
		})
	if err != nil {
		t.Fatal(err)
	}
	if info.NumPending != 200 {
		t.Fatalf("pending %d, want 200", info.NumPending)
	}
	if err := ord.Start(); err != nil {
		t.Fatal(err)
	}
	defer ord.Stop()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	testwait.Until(t, 10*time.Second, "50 messages handled", func() bool { return count() >= 50 })
	// Lose the consumer twice, with writes in between.
	for round := range 2 {
		st, err := ns.JS.Stream(ctx, "ORD")
		if err != nil {
			t.Fatal(err)
		}
		names := st.ConsumerNames(ctx)
		for name := range names.Name() {
			if err := ns.JS.DeleteConsumer(ctx, "ORD", name); err != nil {
				t.Fatal(err)
			}
		}
		publish(200+round*100, 300+round*100)
	}
	testwait.Until(t, 10*time.Second, "400 messages handled", func() bool { return count() >= 400 })
	mu.Lock()
	defer mu.Unlock()
	want := make([]uint64, 400)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %d messages, want stream sequences 1..400 once each in order; first difference near %v", len(got), firstDiff(got, want))
	}
	if overlap {
		t.Error("the handler ran for two messages at once")
	}
	if ord.Resets() < 1 {
		t.Errorf("%d consumers made again, want at least 1", ord.Resets())
	}
}

func firstDiff(a, b []uint64) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("index %d: %d vs %d", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(a), len(b))
}
