package meta

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// next reads n entries (a nil one as "<nil>") from w, or fails after 10 s.
func next(t *testing.T, w jetstream.KeyWatcher, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				t.Fatalf("the watch closed after %v", got)
			}
			if e == nil {
				got = append(got, "<nil>")
				continue
			}
			got = append(got, fmt.Sprintf("%s=%s r%d %s", e.Key(), e.Value(), e.Revision(), e.Operation()))
		case <-time.After(10 * time.Second):
			t.Fatalf("after %v: no entry in 10 s", got)
		}
	}
	return got
}

// Follow delivers what kv.WatchAll delivers: the current values, nil, then
// every change (puts, deletes, purges) with its revision; with updatesOnly,
// the changes only.
func TestFollowLikeWatchAll(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	s, err := Open(ctx, ns.JS, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kv := s.Shadow
	for _, k := range []string{"a", "b", "a", "c"} {
		if _, err := kv.Put(ctx, k, []byte(k+"1")); err != nil {
			t.Fatal(err)
		}
	}
	watch, err := kv.WatchAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	follow, err := s.Follow(ctx, kv, false)
	if err != nil {
		t.Fatal(err)
	}
	defer follow.Stop()
	updates, err := s.Follow(ctx, kv, true)
	if err != nil {
		t.Fatal(err)
	}
	defer updates.Stop()
	want := next(t, watch, 4)
	if got := next(t, follow, 4); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("current values: Follow %v, WatchAll %v", got, want)
	}
	if _, err := kv.Put(ctx, "d", []byte("d1")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	want = next(t, watch, 3)
	if got := next(t, follow, 3); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes: Follow %v, WatchAll %v", got, want)
	}
	if got := next(t, updates, 3); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("updates only: Follow %v, WatchAll %v", got, want)
	}
	follow.Stop()
	for range follow.Updates() { // closed once stopped
	}
}

// A follower whose NATS server restarts sees the next change at once (a
// KeyValue watch would wait 10 to 20 s for missed heartbeats), none twice.
func TestFollowAcrossRestart(t *testing.T) {
	srv := natstest.StartRestartable(t)
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	s, err := Open(ctx, js, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Shadow.Put(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	for _, updatesOnly := range []bool{false, true} {
		w, err := s.Follow(ctx, s.Shadow, updatesOnly)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if !updatesOnly {
			next(t, w, 2) // a=1, nil
		}
		srv.Stop()
		srv.Start()
		restarted := time.Now()
		testwait.Until(t, 10*time.Second, "the connection back", nc.IsConnected)
		var rev uint64
		testwait.UntilErr(t, 10*time.Second, "a put after the restart", func() (err error) { // JetStream may take a moment to be back
			rev, err = s.Shadow.Put(ctx, "a", fmt.Appendf(nil, "after restart %v", updatesOnly))
			return err
		})
		got := next(t, w, 1)
		t.Logf("updatesOnly %v: %v %s after the restart", updatesOnly, got, time.Since(restarted))
		if want := fmt.Sprintf("a=after restart %v r%d KeyValuePutOp", updatesOnly, rev); got[0] != want {
			t.Fatalf("after the restart: %s, want %s", got[0], want)
		}
		if took := time.Since(restarted); took > 5*time.Second {
			t.Fatalf("the change after the restart came %s later", took)
		}
		// A marker after it: the next change delivered is the marker's,
		// not the one before again.
		mark, err := s.Shadow.Put(ctx, "a", []byte("marker"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := next(t, w, 1)[0], fmt.Sprintf("a=marker r%d KeyValuePutOp", mark); got != want {
			t.Fatalf("after the restart, then %s, want %s: delivered twice?", got, want)
		}
	}
}
