package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wire"
)

// publishOne publishes one update of shard 0 of index "t" (a delete when
// doc is empty) and returns its stream sequence.
func publishOne(t *testing.T, store *meta.Store, id, doc string) uint64 {
	t.Helper()
	msg := nats.NewMsg(subject.Doc("t", 0, id))
	msg.Data = []byte(doc)
	if doc == "" {
		msg.Header.Set(subject.HeaderOp, subject.OpDelete)
	}
	ack, err := store.JS.PublishMsg(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

// waitNapping waits until r's scorch persister naps (WriteOptions.PersistNap)
// with its merger waiting on it, and both stay so over five polls: from
// then on, batches stay in memory until the nap ends. Before that, each
// merge plan wakes the persister, which writes every batch that arrived
// meanwhile: under load (CI's long tier) a test's batches arrive while the
// two catch up, and most were written (2 segments in memory of 15).
// Napping shows in scorch's counters: the persister in its loop (begun,
// not ended) and not waiting for a new root, the merger in its loop, and
// neither moving.
func waitNapping(ctx context.Context, t *testing.T, r *Replica) {
	t.Helper()
	sc, err := r.scorch()
	if err != nil {
		t.Fatal(err)
	}
	st, ok := sc.Stats().(*scorch.Stats)
	if !ok {
		t.Fatalf("scorch statistics are %T", sc.Stats())
	}
	var last [6]any
	for quiet := 0; quiet < 5; {
		m := st.ToMap()
		now := [6]any{m["TotPersistLoopBeg"], m["TotPersistLoopEnd"], m["TotPersistLoopWait"], m["TotFileMergeLoopBeg"], m["TotFileMergeLoopEnd"], m["CurRootEpoch"]}
		// A loop that persisted a root that changed meanwhile, or failed,
		// begins again without ending.
		napping := m["TotPersistLoopBeg"].(uint64) == m["TotPersistLoopEnd"].(uint64)+m["TotPersistLoopProgress"].(uint64)+m["TotPersistLoopErr"].(uint64)+1 &&
			m["TotPersistLoopWait"] == m["TotPersistLoopEnd"] &&
			m["TotFileMergeLoopBeg"].(uint64) == m["TotFileMergeLoopEnd"].(uint64)+1
		if napping && now == last {
			quiet++
		} else {
			quiet = 0
		}
		last = now
		select {
		case <-ctx.Done():
			t.Fatalf("scorch's persister is not napping: %v", m)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestFoldFreshSegments: updates applied one batch at a time, a segment
// each, with the persister asleep. A replica that folds holds at most
// FreshSegments in-memory segments, one that does not holds one a batch;
// both hold the same documents, in their latest versions, and score every
// query alike.
func TestFoldFreshSegments(t *testing.T) {
	const limit = 3
	folded, store := followReplica(t, WriteOptions{ApplyInterval: -1, PersistNap: time.Hour, MergeFloor: -1, FreshSegments: limit})
	plain := followStore(t, store, WriteOptions{ApplyInterval: -1, PersistNap: time.Hour, MergeFloor: -1, FreshSegments: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	apply := func(id, doc string) {
		t.Helper()
		seq := publishOne(t, store, id, doc)
		for _, r := range []*Replica{folded, plain} {
			if err := r.WaitSeq(ctx, seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The persister naps (an hour) before it writes fresh segments: every
	// batch stays in memory.
	apply("seed", `{"name":"seed"}`)
	for _, r := range []*Replica{folded, plain} {
		waitNapping(ctx, t, r)
	}
	// Input this project did not write, folded again and again below:
	// scripts, a combining accent, an emoji, a 40 KB field, a number.
	apply("odd1", `{"name":"İstanbul köfte 🍢 麻辣烫","description":"Cafe\u0301 crème brûlée ﬁnal"}`)
	apply("odd2", fmt.Sprintf(`{"name":"long %s","price":12.5}`, strings.Repeat("lorem ipsum dolor ", 2200)))
	for i := range 12 {
		apply(fmt.Sprintf("d%d", i), fmt.Sprintf(`{"name":"spicy dish %d","description":"%s","origin":"%s"}`, i, "noodles soup"[:4+i%8], []string{"Çukurova", "Sichuan", "Isan"}[i%3]))
	}
	apply("d3", `{"name":"mild dish three","description":"rice"}`) // a new version
	apply("d5", "")                                                // a delete
	apply("d7", `{"name":"spicy spicy dish seven"}`)
	apply("d5", `{"name":"dish five is back"}`)

	// Fifteen batches leave live documents, the seed's and fourteen after
	// the persister began its nap (a segment whose documents are all
	// replaced or deleted is dropped): the replica that does not fold
	// holds those fourteen in memory.
	_, mem := folded.Segments()
	plainFiles, plainMem := plain.Segments()
	if mem > limit || plainMem < 14 {
		t.Errorf("segments in memory: folding %d (want at most %d); not folding %d, and %d files (want one a batch since the nap began, 14)",
			mem, limit, plainMem, plainFiles)
	}
	if p := folded.Progress(); p.Reindexed == 0 || p.Indexed != plain.Progress().Indexed {
		t.Errorf("progress folding %+v, not folding %+v: want documents indexed again, the same updates", p, plain.Progress())
	}
	for _, q := range []string{
		`{"match_all":{}}`,
		`{"match":"spicy dish","field":"name"}`,
		`{"match":"five","field":"name"}`,
		`{"match":"three","field":"name"}`,
		`{"match":"noodles","field":"description"}`,
		`{"match":"köfte","field":"name"}`,
		`{"match":"麻辣烫","field":"name"}`,
		`{"match":"crème","field":"description"}`,
		`{"match":"ipsum","field":"name"}`,
		`{"min":10,"max":20,"field":"price"}`,
		`{"term":"Çukurova","field":"origin.keyword"}`, // a dynamic string's keyword sub-field (keyword.go)
		`{"term":"Isan","field":"origin.keyword"}`,
	} {
		req := wire.ShardRequest{Query: json.RawMessage(q), K: 100, Fields: []string{"name"}}
		got, err := folded.Search(ctx, &req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Search(ctx, &req)
		if err != nil {
			t.Fatal(err)
		}
		if want.Total == 0 {
			t.Errorf("%s: no hit: the comparison says nothing", q)
		}
		if got.Total != want.Total || len(got.Hits) != len(want.Hits) {
			t.Fatalf("%s: %d hits (total %d) folding, %d (total %d) not", q, len(got.Hits), got.Total, len(want.Hits), want.Total)
		}
		for i := range got.Hits {
			g, w := got.Hits[i], want.Hits[i]
			if g.ID != w.ID || g.Score != w.Score || fmt.Sprint(g.Fields) != fmt.Sprint(w.Fields) {
				t.Errorf("%s hit %d: folding %s %v %v, not folding %s %v %v", q, i, g.ID, g.Score, g.Fields, w.ID, w.Score, w.Fields)
			}
		}
	}
}

// waitPersisted waits until each replica holds no in-memory segment.
func waitPersisted(t *testing.T, reps ...*Replica) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, r := range reps {
		sc, err := r.scorch()
		if err != nil {
			t.Fatal(err)
		}
		if err := persisted(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
}
