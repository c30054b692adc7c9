package control

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/subject"
)

// A document with a field the change adds, written while the change's
// markers go out (after the first check of the index's fields), may be
// indexed before them the old way: the change is undone (the old
// mapping stored again, and its markers sent at a later revision, which
// every replica applies after the change's) and refused with conflict.
func TestChangeMappingUndone(t *testing.T) {
	ctx, st := openStore(t)
	def, err := CreateIndex(ctx, st, []byte(`{"name":"shop","shards":2}`))
	if err != nil {
		t.Fatal(err)
	}
	markersPublished = func() {
		if _, _, err := st.AddFields(ctx, def, []uint64{api.FieldHash("tag")}, 1000); err != nil {
			t.Error(err)
		}
	}
	defer func() { markersPublished = func() {} }()
	change, _ := json.Marshal(api.MappingChange{Index: "shop", Mapping: json.RawMessage(`{"default_mapping":{"properties":{"tag":{"fields":[{"type":"text","analyzer":"keyword","index":true}]}}}}`)})
	_, err = ChangeMapping(ctx, st, change)
	if api.CodeOf(err) != api.CodeConflict || !strings.Contains(err.Error(), `already hold field "tag"`) {
		t.Fatalf("%v, want a conflict naming tag", err)
	}
	now, err := st.Index(ctx, "shop")
	if err != nil || string(now.Mapping) != string(def.Mapping) {
		t.Fatalf("the mapping after the undo: %s (%v), want the old one", now.Mapping, err)
	}
	// Every shard's markers: the change's, then the undo's, at a later
	// revision, with the old mapping.
	for shard := range 2 {
		cons, err := st.Docs.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject.DocsOfShard("shop", shard)}})
		if err != nil {
			t.Fatal(err)
		}
		batch, err := cons.FetchNoWait(10)
		if err != nil {
			t.Fatal(err)
		}
		var revs []uint64
		var last []byte
		for m := range batch.Messages() {
			if m.Headers().Get(subject.HeaderOp) != subject.OpMapping {
				t.Fatalf("shard %d: a message that is not a marker: %s", shard, m.Subject())
			}
			rev, _ := strconv.ParseUint(m.Headers().Get(subject.HeaderMappingRevision), 10, 64)
			revs = append(revs, rev)
			last = m.Data()
		}
		if len(revs) != 2 || revs[1] <= revs[0] || string(last) != string(def.Mapping) {
			t.Fatalf("shard %d: markers of revisions %v, the last with %s; want two, the undo's later with the old mapping", shard, revs, last)
		}
	}
}

// The same change asked again adds no marker where its revision's is
// already in the stream, nor moves it, and puts back one that is
// missing (a change whose markers did not all go out), however often it
// is asked.
func TestChangeMappingAgain(t *testing.T) {
	ctx, st := openStore(t)
	if _, err := CreateIndex(ctx, st, []byte(`{"name":"shop","shards":2}`)); err != nil {
		t.Fatal(err)
	}
	change, _ := json.Marshal(api.MappingChange{Index: "shop", Mapping: json.RawMessage(`{"default_mapping":{"properties":{"tag":{"fields":[{"type":"text","analyzer":"keyword","index":true}]}}}}`)})
	markers := func(shard int) int {
		t.Helper()
		info, err := st.Docs.Info(ctx, jetstream.WithSubjectFilter(subject.DocsOfShard("shop", shard)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range info.State.Subjects { // the filter's subjects, each with its count
			n += int(c)
		}
		return n
	}
	at := func(shard int) uint64 { // the stream sequence of the shard's last marker
		t.Helper()
		m, err := st.Docs.GetLastMsgForSubject(ctx, subject.DocsOfShard("shop", shard))
		if err != nil {
			t.Fatal(err)
		}
		return m.Sequence
	}
	var first uint64
	for i := range 5 {
		if _, err := ChangeMapping(ctx, st, change); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = at(0)
		}
	}
	if m0, m1 := markers(0), markers(1); m0 != 1 || m1 != 1 || at(0) != first {
		t.Fatalf("markers after the same change 5 times: %d and %d, want 1 a shard, where the first went (shard 0's at %d, first at %d)", m0, m1, at(0), first)
	}
	// Shard 1's marker lost (its publish failed): asking again puts it back.
	if err := st.Docs.Purge(ctx, jetstream.WithPurgeSubject(subject.DocsOfShard("shop", 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := ChangeMapping(ctx, st, change); err != nil {
		t.Fatal(err)
	}
	if m0, m1 := markers(0), markers(1); m0 != 1 || m1 != 1 {
		t.Fatalf("markers after asking again: %d and %d, want 1 a shard", m0, m1)
	}
}

// openStore opens Quarry's resources on a NATS server of the test's own,
// with a context that ends with the test or after a minute.
func openStore(t *testing.T) (context.Context, *meta.Store) {
	t.Helper()
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	st, err := meta.Open(ctx, ns.JS, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, st
}
