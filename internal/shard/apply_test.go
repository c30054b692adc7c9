package shard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/subject"
)

// followReplica starts a replica of shard 0 of index "t" following a real
// JetStream stream, with writes w.
func followReplica(t *testing.T, w WriteOptions) (*Replica, *meta.Store) {
	t.Helper()
	ns := natstest.Start(t)
	store, err := meta.Open(context.Background(), ns.JS, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return followStore(t, store, w), store
}

// followStore starts another replica of shard 0 of index "t" following
// store's stream, with writes w.
func followStore(t *testing.T, store *meta.Store, w WriteOptions) *Replica {
	t.Helper()
	m, err := indexmap.Build(catalog.Mapping())
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenLocal(Config{Index: "t", Shard: 0, Mapping: m, Dir: t.TempDir() + "/r", Store: store, Writes: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// publishDocs publishes n documents of shard 0 at once (asynchronously)
// and returns the last one's sequence once all are stored.
func publishDocs(t *testing.T, store *meta.Store, from, n int) uint64 {
	t.Helper()
	var acks []jetstream.PubAckFuture
	for i := from; i < from+n; i++ {
		id := fmt.Sprintf("d%d", i)
		f, err := store.JS.PublishAsync(subject.Doc("t", 0, id), fmt.Appendf(nil, `{"id":%q,"name":"dish %d"}`, id, i))
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, f)
	}
	var last uint64
	for _, f := range acks {
		select {
		case ack := <-f.Ok():
			last = max(last, ack.Sequence)
		case err := <-f.Err():
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			t.Fatal("no acknowledgement in 30s")
		}
	}
	return last
}

// TestApplyInterval: updates that arrive within ApplyInterval of the last
// batch wait and are applied together, as one batch (one segment), and
// none is lost; an update after a quiet spell is applied at once (the
// first batch does not wait for the interval).
func TestApplyInterval(t *testing.T) {
	r, store := followReplica(t, WriteOptions{ApplyInterval: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := publishDocs(t, store, 0, 1)
	start := time.Now()
	if err := r.WaitSeq(ctx, first); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= 2*time.Second {
		t.Errorf("the first update waited %v: it should not wait for the interval", took)
	}
	// 40 updates published at once, well within the interval: at most
	// two batches (one may start before the rest arrive).
	last := publishDocs(t, store, 1, 40)
	if err := r.WaitSeq(ctx, last); err != nil {
		t.Fatal(err)
	}
	p := r.Progress()
	if p.Indexed != 41 || p.Rejected != 0 {
		t.Fatalf("progress %+v: want 41 indexed", p)
	}
	if p.Batches > 3 {
		t.Errorf("41 updates in %d batches: the interval should have gathered them", p.Batches)
	}
	if n, err := r.DocCount(); err != nil || n != 41 {
		t.Errorf("doc count %d, %v; want 41", n, err)
	}
}

// TestApplyIntervalOff: a negative interval applies updates as they come
// (it once overflowed into a wait without end).
func TestApplyIntervalOff(t *testing.T) {
	r, store := followReplica(t, WriteOptions{ApplyInterval: -1, PersistNap: -1, MergeFloor: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 3 {
		if err := r.WaitSeq(ctx, publishDocs(t, store, i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if p := r.Progress(); p.Indexed != 3 || p.Batches != 3 {
		t.Errorf("progress %+v: want 3 documents in 3 batches", p)
	}
}

// TestOnReject: every message a replica skips is handed to OnReject, once
// its batch is applied, with its shard, stream sequence, id (none on a
// bad subject), when the stream stored it and why, naming the limit it is
// over; documents applied and tombstones are not.
func TestOnReject(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := meta.Open(ctx, ns.JS, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := indexmap.Build(catalog.Mapping())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []api.RejectedDocument
	r, err := OpenLocal(Config{Index: "t", Shard: 0, Mapping: m, Dir: t.TempDir() + "/r", Store: store,
		Documents: api.DocumentLimits{MaxFields: 3, MaxDepth: 3}, OnReject: func(d api.RejectedDocument) {
			mu.Lock()
			got = append(got, d)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	seqs := map[string]uint64{}
	for _, p := range []struct{ name, subj, doc string }{
		{"good", subject.Doc("t", 0, "good"), `{"id":"good","name":"kept"}`},
		{"wide", subject.Doc("t", 0, "wide"), `{"id":"wide","a":1,"b":2,"c":3}`},
		{"junk", subject.Doc("t", 0, "junk"), `{"id":"junk",`},
		{"bad subject", subject.DocsOfShard("t", 0)[:len(subject.DocsOfShard("t", 0))-1] + "x.y", `{"id":"x"}`},
	} {
		ack, err := store.JS.Publish(ctx, p.subj, []byte(p.doc))
		if err != nil {
			t.Fatal(err)
		}
		seqs[p.name] = ack.Sequence
	}
	msg := nats.NewMsg(subject.Doc("t", 0, "good"))
	msg.Header.Set(subject.HeaderOp, subject.OpDelete)
	ack, err := store.JS.PublishMsg(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitSeq(ctx, ack.Sequence); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []struct {
		name, id, reason string
	}{
		{"wide", "wide", "over the index's limit of 3 (documents.max_fields)"},
		{"junk", "junk", "malformed"},
		{"bad subject", "", "not a document subject"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Index != "t" || g.Shard != 0 || g.Seq != seqs[w.name] || g.ID != w.id || !strings.Contains(g.Reason, w.reason) ||
			g.Time.IsZero() || time.Since(g.Time) > time.Minute {
			t.Errorf("record of %s: %+v, want seq %d, id %q and a reason saying %q", w.name, g, seqs[w.name], w.id, w.reason)
		}
	}
	if p := r.Progress(); p.Rejected != 3 || p.Indexed != 1 || p.Deleted != 1 {
		t.Errorf("progress %+v", p)
	}
}
