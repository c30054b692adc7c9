package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// A searcher that goes away and comes back (new process, empty disk)
// serves every update acknowledged meanwhile: snapshot + replay.
func TestSearcherRestartReplays(t *testing.T) {
	t.Parallel()
	core := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, nil, &broker.Config{})
	c := core.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "r", 4, nil); err != nil {
		t.Fatal(err)
	}
	mustBulkSnapshot(t, c, "r", ndjson(200, "a"))
	s1 := startRoles(t, core.NATSURL(), nil, &searcher.Config{}, nil)
	bc := c
	waitTotal(t, bc, "r", "noodles", 67)

	// Updates after the snapshot, while the searcher is up.
	for i := range 10 {
		if _, err := c.Put(ctx, "r", fmt.Appendf(nil, `{"id":"b%d","text":"noodles"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	waitTotal(t, bc, "r", "noodles", 77)
	s1.Close()
	if got := total(bc, "r", "noodles"); got != -1 {
		t.Fatalf("with no searcher a search should fail, got total %d", got)
	}
	// Updates while no searcher runs: all acknowledged, none may be lost.
	for i := range 10 {
		if _, err := c.Delete(ctx, "r", fmt.Sprintf("b%d", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Put(ctx, "r", fmt.Appendf(nil, `{"id":"c%d","text":"ramen noodles"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	startRoles(t, core.NATSURL(), nil, &searcher.Config{}, nil)
	waitTotal(t, bc, "r", "noodles", 77)
	waitTotal(t, bc, "r", "ramen", 10)
}

// A manifest whose snapshot fails its digest is refused: the searcher keeps
// serving what it had, and a searcher starting fresh falls back to a full
// replay of the stream. (The node's searcher has replicas of its own: one
// the indexer lends its replicas to loads no snapshot.)
func TestCorruptSnapshotRefused(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	n := startConfig(t, Config{SeparateReplicas: true, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError})),
		Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "d", 2, nil); err != nil {
		t.Fatal(err)
	}
	mustBulkSnapshot(t, c, "d", ndjson(90, "a"))
	waitTotal(t, c, "d", "noodles", 30)
	waitGeneration(t, n, 1)

	js, _ := jetstream.New(n.Conn())
	store, err := meta.Open(ctx, js, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, rev, err := store.Manifest(ctx, "d")
	if err != nil || m.Generation != 1 {
		t.Fatalf("manifest %+v %v", m, err)
	}
	// Generation 2 names objects whose bytes do not match the digest.
	bad := m
	bad.Generation = 2
	bad.Shards = append([]meta.ShardSnapshot(nil), m.Shards...)
	// Shard 0: garbage bytes. Shard 1: the real generation-1 bytes, with a
	// digest that does not match them.
	obj := subject.SegmentObject("d", 2, 0, "sha256=garbage")
	if _, err := store.Segments.PutBytes(ctx, obj, []byte("definitely not a snapshot")); err != nil {
		t.Fatal(err)
	}
	bad.Shards[0].Object = obj
	bad.Shards[1].Digest = "sha256=" + strings.Repeat("0", 64)
	if err := store.PutManifest(ctx, bad, rev); err != nil {
		t.Fatal(err)
	}
	// The searcher tries it and refuses it (shard 0 first; it tries shard
	// 1 once it has given up on shard 0, after its retries).
	waitUntil(t, 20*time.Second, "the searcher refuses generation 2 of shard 0", func() bool {
		return slices.ContainsFunc(logs.match("msg", "new generation refused; still serving the old one"), func(l map[string]any) bool {
			return l["index"] == "d" && l["generation"] == 2.0 && l["shard"] == 0.0
		})
	})
	for _, st := range n.Searcher.Stats() {
		if st.Generation != 1 {
			t.Fatalf("searcher swapped to a corrupt generation: %+v", st)
		}
	}
	waitTotal(t, c, "d", "noodles", 30)

	// A new searcher must not serve the corrupt snapshot either.
	s2 := startRoles(t, n.NATSURL(), nil, &searcher.Config{}, nil)
	// Ready does not wait for the indexes there were (Searcher.Ready).
	waitUntil(t, 20*time.Second, "the new searcher serves both shards", func() bool { return len(s2.Searcher.Stats()) == 2 })
	for _, st := range s2.Searcher.Stats() {
		if st.Generation != 0 || st.Seq == 0 {
			t.Fatalf("new searcher: %+v, want generation 0 (full replay)", st)
		}
	}
}

// Snapshots published while queries run swap generations without failing
// a single query.
func TestGenerationSwapUnderLoad(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "s", 2, nil); err != nil {
		t.Fatal(err)
	}
	mustBulkSnapshot(t, c, "s", ndjson(300, "a"))
	waitTotal(t, c, "s", "noodles", 100)

	var queries, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				queries.Add(1)
				if got := total(c, "s", "noodles"); got != 100 {
					failures.Add(1)
				}
			}
		})
	}
	// Each snapshot once the searcher serves the one before: three swaps
	// under the queries.
	for gen := uint64(2); gen <= 4; gen++ {
		if _, err := c.Snapshot(ctx, "s", 0); err != nil {
			t.Fatal(err)
		}
		waitGeneration(t, n, gen)
	}
	close(stop)
	wg.Wait()
	if f := failures.Load(); f > 0 {
		t.Fatalf("%d of %d queries failed during generation swaps", f, queries.Load())
	}
	t.Logf("%d queries during 3 swaps, none failed", queries.Load())
}

// waitGeneration waits until every shard n's searcher serves is at
// generation gen.
func waitGeneration(t *testing.T, n *Node, gen uint64) {
	t.Helper()
	testwait.UntilErr(t, 20*time.Second, fmt.Sprintf("the searcher serves generation %d", gen), func() error {
		for _, st := range n.Searcher.Stats() {
			if st.Generation != gen {
				return fmt.Errorf("%+v", n.Searcher.Stats())
			}
		}
		return nil
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "b", 2, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		code api.Code
	}{
		{"unknown index search", func() error { _, err := c.Search(ctx, "nope", &api.SearchRequest{Q: "x"}); return err }(), api.CodeNotFound},
		{"unknown index put", func() error { _, err := c.Put(ctx, "nope", []byte(`{"id":"a"}`)); return err }(), api.CodeNotFound},
		{"bad index name", func() error { _, err := c.CreateIndex(ctx, "Bad.Name", 1, nil); return err }(), api.CodeBadRequest},
		{"zero shards", func() error { _, err := c.CreateIndex(ctx, "z", 0, nil); return err }(), api.CodeBadRequest},
		{"bad mapping", func() error {
			_, err := c.CreateIndex(ctx, "m", 1, json.RawMessage(`{"default_analyzer":"nope"}`))
			return err
		}(), api.CodeBadRequest},
		{"duplicate index", func() error { _, err := c.CreateIndex(ctx, "b", 1, nil); return err }(), api.CodeConflict},
		{"id not a string or whole number", func() error { _, err := c.Put(ctx, "b", []byte(`{"id":true}`)); return err }(), api.CodeBadRequest},
		{"malformed doc", func() error { _, err := c.Put(ctx, "b", []byte(`{"id":"a",`)); return err }(), api.CodeBadRequest},
		{"bad query", func() error {
			_, err := c.Search(ctx, "b", &api.SearchRequest{Query: json.RawMessage(`{"bogus":1}`)})
			return err
		}(), api.CodeBadRequest},
		{"negative size", func() error { _, err := c.Search(ctx, "b", &api.SearchRequest{Size: -2}); return err }(), api.CodeBadRequest},
		{"rm unknown index", c.DeleteIndex(ctx, "nope"), api.CodeNotFound},
	}
	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if got := api.CodeOf(tc.err); got != tc.code {
			t.Errorf("%s: code %s (%v), want %s", tc.name, got, tc.err, tc.code)
		}
	}
	// Nothing above changed the index.
	if _, err := c.Index(ctx, "m"); api.CodeOf(err) != api.CodeNotFound {
		t.Errorf("index with a bad mapping exists: %v", err)
	}
	waitTotal(t, c, "b", "*", 0)
}

// An index deleted and created again starts empty, with its new shard
// count, on every role.
func TestRecreateIndex(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "x", 2, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "x", ndjson(30, "a"))
	waitTotal(t, c, "x", "noodles", 10)
	if err := c.DeleteIndex(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndex(ctx, "x", 3, nil); err != nil {
		t.Fatal(err)
	}
	waitTotal(t, c, "x", "noodles", 0)
	if _, err := c.Put(ctx, "x", []byte(`{"id":"new","text":"noodles"}`)); err != nil {
		t.Fatal(err)
	}
	waitTotal(t, c, "x", "noodles", 1)
	r, err := c.Search(ctx, "x", &api.SearchRequest{Q: "noodles"})
	if err != nil || r.Shards.Total != 3 {
		t.Fatalf("after re-creation: %+v %v", r, err)
	}
	st, err := c.Status(ctx, "x")
	if err != nil || st.Generation != 0 {
		t.Fatalf("re-created index has an old manifest: %+v %v", st, err)
	}
}

// Documents over the size limit are refused, by line, and the rest of a
// bulk goes in.
func TestDocumentSizeLimit(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "big", 1, nil); err != nil {
		t.Fatal(err)
	}
	huge := `{"id":"huge","text":"` + strings.Repeat("x", api.DefaultMaxDocBytes) + `"}`
	if _, err := c.Put(ctx, "big", []byte(huge)); api.CodeOf(err) != api.CodeBadRequest || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("huge put: %v", err)
	}
	body := bytes.NewBufferString(`{"id":"a","text":"noodles"}` + "\n" + huge + "\n" + `{"id":"b","text":"noodles"}` + "\n")
	res := mustBulk(t, c, "big", body)
	if res.Stored != 2 || res.Failed != 1 || res.Errors[0].Line != 2 || !strings.Contains(res.Errors[0].Err, "over the limit") {
		t.Fatalf("bulk: %+v", res)
	}
	waitTotal(t, c, "big", "noodles", 2)
}
