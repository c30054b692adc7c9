package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// An index created a moment ago exists for every broker, even one whose
// watch has not delivered the definition yet: the deploy test once saw
// 22 queries answered "index does not exist" by the broker that learned
// of a new index last. A name no one created is still not found.
func TestNewIndexIsNeverMissing(t *testing.T) {
	s, store, ctx := startStore(t)
	b := startBroker(t, s, store, ctx, Config{})
	missing := 0
	for i := range 40 {
		name := fmt.Sprintf("new-%d", i)
		if _, err := store.CreateIndex(ctx, api.IndexDefinition{Name: name, Shards: 1}); err != nil {
			t.Fatal(err)
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := b.Search(qctx, name, &api.SearchRequest{Q: "pizza"})
		cancel()
		if api.CodeOf(err) == api.CodeNotFound {
			missing++
			t.Logf("%s: %v", name, err)
		}
	}
	if missing > 0 {
		t.Fatalf("%d of 40 indexes searched right after their creation did not exist", missing)
	}
	_, err := b.Search(ctx, "never-made", &api.SearchRequest{Q: "pizza"})
	if api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("an index no one made: %v, want not_found", err)
	}
}

// A search of an index the broker's watch has not delivered yet is
// admitted like any other: its team's rate limit holds in that window
// too (it used to go through unadmitted until the watch caught up).
func TestLookedUpIndexIsAdmitted(t *testing.T) {
	s, store, ctx := startStore(t)
	b := startBroker(t, s, store, ctx, Config{})
	raw, _ := json.Marshal(api.TeamSettings{Name: "alpha", Rate: 1, Burst: 1})
	if _, err := store.Teams.Put(ctx, "alpha", raw); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateIndex(ctx, api.IndexDefinition{Name: "late", Shards: 1, Team: "alpha"}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the broker learns the index and its team's limits", func() bool {
		_, known := b.Index("late")
		return known && b.admit.Team("alpha").Limited()
	})
	// The watch's lag, held open: the broker no longer knows the index.
	b.mu.Lock()
	delete(b.defs, "late")
	b.mu.Unlock()
	nc := s.Conn(t, "client")
	// One after another: the bucket holds one token and gains one a
	// second, so at most 1 + the seconds taken are admitted.
	start := time.Now()
	refused := 0
	for range 5 {
		msg, err := nc.Request(subject.SearchPrefix+".late", []byte(`{"q":"pizza"}`), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Header.Get(micro.ErrorCodeHeader) == "429" {
			refused++
		}
	}
	if most := 1 + int(time.Since(start)/time.Second); 5-refused > most {
		t.Fatalf("%d of 5 searches admitted in %v, want at most %d (rate 1/s, burst 1)", 5-refused, time.Since(start).Round(time.Millisecond), most)
	}
}

// TestNewIndexBurst: a burst of searches of an index the watch has not
// delivered, while other lookups hold all but one of the broker's store
// reads, all find it: they share one read and wait for their turn (they
// used to answer not_found beyond the few reads at once).
func TestNewIndexBurst(t *testing.T) {
	s, store, ctx := startStore(t)
	b := startBroker(t, s, store, ctx, Config{})
	if _, err := store.CreateIndex(ctx, api.IndexDefinition{Name: "burst", Shards: 1}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the broker learns the index", func() bool { _, known := b.Index("burst"); return known })
	b.mu.Lock()
	delete(b.defs, "burst") // the watch's lag, held open
	b.mu.Unlock()
	for range maxIndexLookups - 1 { // lookups of other names in flight
		b.lookups <- struct{}{}
	}
	defer func() {
		for range maxIndexLookups - 1 {
			<-b.lookups
		}
	}()
	const burst = 32
	errs := make(chan error, burst)
	start := make(chan struct{})
	for range burst {
		go func() {
			<-start
			_, err := b.lookupIndex(ctx, "burst")
			errs <- err
		}()
	}
	close(start)
	for range burst {
		if err := <-errs; err != nil {
			t.Errorf("a search in the burst: %v", err)
		}
	}
}

// TestIndexLookupFloodBounded: with every store read taken and as many
// names waiting as are allowed, a lookup of one more made-up name answers
// not_found at once instead of joining the wait.
func TestIndexLookupFloodBounded(t *testing.T) {
	s, store, ctx := startStore(t)
	b := startBroker(t, s, store, ctx, Config{})
	for range maxIndexLookups {
		b.lookups <- struct{}{}
	}
	defer func() {
		for range maxIndexLookups {
			<-b.lookups
		}
	}()
	b.lookupsWaiting.Add(maxIndexLookupsWaiting)
	defer b.lookupsWaiting.Add(-maxIndexLookupsWaiting)
	start := time.Now()
	_, err := b.lookupIndex(ctx, "made-up")
	if api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("lookup beyond the waiting bound: %v, want not_found", err)
	}
	if took := time.Since(start); took >= indexLookupTimeout {
		t.Fatalf("answered after %s: it waited for a read", took)
	}
}
