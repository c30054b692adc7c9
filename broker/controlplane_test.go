package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/plugins"
)

func cpDroppedVec() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dropped_total"}, []string{"lane"})
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// The writer writes what the query path emits, in the order emitted, each
// lane's in its own order.
func TestControlPlaneWritesInOrder(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	const n = 100
	all := make(chan struct{})
	c := newControlPlane(quietLog(), cpDroppedVec(), [numLanes]int{n, n}, func(_ context.Context, w cpWrite) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, w.index)
		if len(got) == 2*n {
			close(all)
		}
	})
	// Queued before the writer starts, and while it runs.
	for i := range n / 2 {
		c.emit(cpWrite{kind: cpRollBack, index: fmt.Sprint("f", i)})
		c.emit(cpWrite{kind: cpInterleaved, index: fmt.Sprint("i", i)})
	}
	stop := c.start()
	defer stop()
	for i := n / 2; i < n; i++ {
		if !c.emit(cpWrite{kind: cpTakeOut + cpKind(i%2), index: fmt.Sprint("f", i)}) || !c.emit(cpWrite{kind: cpInterleaved, index: fmt.Sprint("i", i)}) {
			t.Fatal("dropped with room in the queue")
		}
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Fatal("not every write was written")
	}
	mu.Lock()
	defer mu.Unlock()
	next := map[byte]int{}
	for _, s := range got {
		if want := fmt.Sprint(s[:1], next[s[0]]); s != want {
			t.Fatalf("wrote %s where %s was next: %v", s, want, got)
		}
		next[s[0]]++
	}
	// The fallback lane goes first: what was queued before the start
	// came out fallbacks first.
	if !strings.HasPrefix(got[0], "f") {
		t.Fatalf("first write %s, want a fallback", got[0])
	}
}

// A full queue drops and counts the write at once, never waiting for the
// writer (here stuck in a write); the other lane keeps its room.
func TestControlPlaneFullQueueDrops(t *testing.T) {
	dropped := cpDroppedVec()
	entered, release := make(chan struct{}, 8), make(chan struct{})
	c := newControlPlane(quietLog(), dropped, [numLanes]int{2, 2}, func(ctx context.Context, w cpWrite) {
		entered <- struct{}{}
		<-release
	})
	stop := c.start()
	defer stop()
	defer close(release)
	c.emit(cpWrite{kind: cpRollBack, index: "a"})
	<-entered // the writer holds a; the queue is empty again
	emitted := make(chan []bool)
	go func() {
		var ok []bool
		for _, index := range []string{"b", "c", "d", "e"} {
			ok = append(ok, c.emit(cpWrite{kind: cpTakeOut, index: index}))
		}
		emitted <- ok
	}()
	select {
	case ok := <-emitted:
		if fmt.Sprint(ok) != "[true true false false]" {
			t.Fatalf("emitted %v, want two queued and two dropped", ok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("emit blocked on a full queue")
	}
	if n := testutil.ToFloat64(dropped.WithLabelValues("fallback")); n != 2 {
		t.Fatalf("%v fallback writes counted dropped, want 2", n)
	}
	if n := testutil.ToFloat64(dropped.WithLabelValues("interleave")); n != 0 {
		t.Fatalf("%v interleave writes counted dropped, want 0", n)
	}
	if !c.emit(cpWrite{kind: cpInterleaved, index: "x"}) {
		t.Fatal("a full fallback lane dropped an interleave write")
	}
}

// Stopping the writer writes what is queued and ends its goroutine; a
// write that does not finish within the bound has its context cancelled,
// and what is still queued then is dropped and counted.
func TestControlPlaneStop(t *testing.T) {
	before := runtime.NumGoroutine()
	var written []string
	c := newControlPlane(quietLog(), cpDroppedVec(), [numLanes]int{8, 8}, func(_ context.Context, w cpWrite) {
		written = append(written, w.index) // only the writer's goroutine writes
	})
	stop := c.start()
	for _, index := range []string{"a", "b", "c"} {
		c.emit(cpWrite{kind: cpRollBack, index: index})
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("stop did not return")
	}
	if fmt.Sprint(written) != "[a b c]" {
		t.Fatalf("written at shutdown: %v", written)
	}
	if c.running.Load() {
		t.Fatal("the writer still runs")
	}

	// Stuck: the first write waits for its context; the bound cancels it
	// and the other two are dropped.
	dropped := cpDroppedVec()
	entered := make(chan struct{}, 1)
	c = newControlPlane(quietLog(), dropped, [numLanes]int{8, 8}, func(ctx context.Context, w cpWrite) {
		entered <- struct{}{}
		<-ctx.Done()
	})
	c.flush = 50 * time.Millisecond
	stop = c.start()
	c.emit(cpWrite{kind: cpRollBack, index: "a"})
	<-entered
	c.emit(cpWrite{kind: cpRollBack, index: "b"})
	c.emit(cpWrite{kind: cpInterleaved, index: "c"})
	start := time.Now()
	stop()
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("stop took %s with a bound of %s", took, c.flush)
	}
	if f, i := testutil.ToFloat64(dropped.WithLabelValues("fallback")), testutil.ToFloat64(dropped.WithLabelValues("interleave")); f != 1 || i != 1 {
		t.Fatalf("dropped at shutdown: %v fallback, %v interleave; want 1 and 1", f, i)
	}

	// No goroutine left behind (the timers and context callbacks end
	// too); others of the runtime may come and go, so wait a little.
	testwait.UntilErr(t, 10*time.Second, "the goroutines back to as many as before", func() error {
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			return fmt.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})
}

// Two brokers rolling the same tripped version back at once make one
// change, through ChangePipeline: one new revision, one "rolled back"
// event; a take-out later on is one more revision, and the writer of a
// broker Run starts writes it.
func TestRollBackOnce(t *testing.T) {
	s, store, ctx := startStore(t)
	good, bad := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	for _, d := range []string{good, bad} {
		if _, err := store.ChangePipeline(ctx, "rb", "activate", func(spec *api.PipelineSpec) error {
			spec.Rewriters = []api.StepSpec{{Plugin: "flaky", Digest: d, Policy: api.FailClosed}}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := store.Pipeline(ctx, "rb")
	if err != nil {
		t.Fatal(err)
	}
	var brokers []*Broker
	for range 4 {
		b, err := New(s.NC, store, Config{Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		brokers = append(brokers, b)
	}
	var wg sync.WaitGroup
	for _, b := range brokers {
		wg.Go(func() { b.rollBack(ctx, "rb", plugins.Rewriter, "flaky", api.ShortDigest(bad), "test") })
	}
	wg.Wait()
	after, err := store.Pipeline(ctx, "rb")
	if err != nil {
		t.Fatal(err)
	}
	hist, err := store.PipelineHistory(ctx, "rb")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 || after.Rewriters[0].Digest != good || after.Revision <= before.Revision ||
		after.Change != "automatic fallback: flaky "+api.ShortDigest(bad)+" rolled back" {
		t.Fatalf("after the rollbacks: %d revisions, %+v", len(hist), after)
	}
	evs := events(ctx, t, store)
	if len(evs) != 1 || evs[0].Event != "rolled back" || !strings.Contains(evs[0].Reason, fmt.Sprintf("(now revision %d)", after.Revision)) {
		t.Fatalf("events: %+v", evs)
	}

	// A take-out through a running broker's writer.
	b := brokers[0]
	rctx, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- b.Run(rctx) }()
	<-b.Ready()
	ev := api.PluginEvent{Index: "rb", Plugin: "flaky", Version: api.ShortDigest(good), Time: time.Now().UTC(), Event: "taken out", Reason: "test"}
	b.cp.emit(cpWrite{kind: cpTakeOut, index: "rb", pluginKind: plugins.Rewriter, plugin: "flaky", version: ev.Version, ev: ev})
	stopRun() // Run's writer writes what is queued before Run returns
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	spec, err := store.Pipeline(ctx, "rb")
	if err != nil || spec.Revision != after.Revision+1 || spec.Rewriters[0].TakenOut == nil {
		t.Fatalf("after the take-out: %+v %v", spec, err)
	}
	if evs := events(ctx, t, store); len(evs) != 2 {
		t.Fatalf("events: %+v", evs)
	}
}

// events returns the plugin events stored.
func events(ctx context.Context, t *testing.T, store *meta.Store) []api.PluginEvent {
	t.Helper()
	keys, err := store.Events.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []api.PluginEvent
	for k := range keys.Keys() {
		e, err := store.Events.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var ev api.PluginEvent
		if err := json.Unmarshal(e.Value(), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}
