package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wire"
)

// TestMappingMarker: a mapping marker in a shard's stream changes the
// replica's mapping at that point: the documents after it are indexed
// with the new field's analyzer (a keyword field keeps "Hot Sauce"
// whole), those before it as they were; a replica replaying the stream
// from the start, made with the old mapping, ends the same; a marker of
// an earlier revision, arriving late, is ignored; a marker whose mapping
// does not build is skipped and counted as rejected; the replica keeps
// following.
func TestMappingMarker(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := meta.Open(ctx, ns.JS, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	old, err := indexmap.Canonical(json.RawMessage(`{"default_mapping":{"properties":{"name":{"fields":[{"type":"text","analyzer":"en","index":true,"include_in_all":true}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	next, err := indexmap.Canonical(json.RawMessage(`{"default_mapping":{"properties":{"name":{"fields":[{"type":"text","analyzer":"en","index":true,"include_in_all":true}]},"tag":{"fields":[{"type":"text","analyzer":"keyword","index":true}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	follow := func() *Replica {
		m, err := indexmap.Build(old)
		if err != nil {
			t.Fatal(err)
		}
		r, err := OpenLocal(Config{Index: "t", Shard: 0, Mapping: m, Dir: t.TempDir() + "/r", Store: store})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := follow()
	// Documents, the marker and more documents at once: the marker
	// falls inside one of the replica's batches.
	var acks []jetstream.PubAckFuture
	publish := func(m *nats.Msg) {
		f, err := store.JS.PublishMsgAsync(m)
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, f)
	}
	doc := func(id, tag string) *nats.Msg {
		return &nats.Msg{Subject: subject.Doc("t", 0, id), Data: fmt.Appendf(nil, `{"id":%q,"name":"sauce %s","tag":%q}`, id, id, tag)}
	}
	marker := func(update string, rev int, mapping []byte) *nats.Msg {
		m := nats.NewMsg(subject.MappingMarker("t", 0, update))
		m.Header.Set(subject.HeaderOp, subject.OpMapping)
		m.Header.Set(subject.HeaderMappingRevision, fmt.Sprint(rev))
		m.Data = mapping
		return m
	}
	for i := range 5 {
		publish(doc(fmt.Sprintf("before%d", i), "Hot Sauce"))
	}
	publish(marker("u1", 5, next))
	for i := range 5 {
		publish(doc(fmt.Sprintf("after%d", i), "Hot Sauce"))
	}
	publish(marker("u0", 3, old)) // an earlier change's, late: ignored
	publish(marker("u2", 6, []byte(`{"default_mapping":{"nonsense":true}}`)))
	publish(doc("last", "Hot Sauce"))
	var last uint64
	for _, f := range acks {
		select {
		case ack := <-f.Ok():
			last = max(last, ack.Sequence)
		case err := <-f.Err():
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	second := follow() // from the start, with the old mapping
	for name, r := range map[string]*Replica{"the replica": first, "a replica replaying the stream": second} {
		if err := r.WaitSeq(ctx, last); err != nil {
			t.Fatal(err)
		}
		ids := func(q string) []string {
			t.Helper()
			res, err := r.Search(ctx, &wire.ShardRequest{Query: json.RawMessage(q), K: 20})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var out []string
			for _, h := range res.Hits {
				out = append(out, h.ID)
			}
			slices.Sort(out)
			return out
		}
		if got := ids(`{"term":"Hot Sauce","field":"tag"}`); !slices.Equal(got, []string{"after0", "after1", "after2", "after3", "after4", "last"}) {
			t.Errorf("%s: the keyword tag found %v, want the documents after the marker", name, got)
		}
		if got := ids(`{"term":"hot","field":"tag"}`); len(got) != 5 || got[0] != "before0" {
			t.Errorf("%s: the dynamic tag's word found %v, want the 5 documents before the marker", name, got)
		}
		if got := ids(`{"match":"sauces","field":"name"}`); len(got) != 11 {
			t.Errorf("%s: name (English, stemmed) found %v, want all 11", name, got)
		}
		if got := r.Progress(); got.Rejected != 1 || got.Indexed != 11 {
			t.Errorf("%s: progress %+v, want 11 indexed and the bad marker rejected", name, got)
		}
		m, err := json.Marshal(r.idx.Mapping())
		if err != nil || string(m) != string(next) || r.mappingRev != 5 {
			t.Errorf("%s: mapping %s (%v) of revision %d, want %s of 5", name, m, err, r.mappingRev, next)
		}
	}
}
