package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/searcher"
)

// benchQueries are typical menu searches.
var benchQueries = []string{"spicy noodles", "pad thai", "vegan burger", "margherita pizza", "sushi", "gluten free pasta", "chicken", "chocolate dessert"}

// bleveDirect builds one scorch index of the documents the way a program
// using bleve alone would: batches of 512.
func bleveDirect(tb testing.TB, dir string, docs []byte) bleve.Index {
	tb.Helper()
	m, err := indexmap.Build(catalog.Mapping())
	if err != nil {
		tb.Fatal(err)
	}
	idx, err := bleve.NewUsing(dir, m, scorch.Name, scorch.Name, map[string]any{"unsafe_batch": true})
	if err != nil {
		tb.Fatal(err)
	}
	b := idx.NewBatch()
	for line := range bytes.Lines(docs) {
		var doc map[string]any
		if err := json.Unmarshal(line, &doc); err != nil {
			tb.Fatal(err)
		}
		b.Index(doc["id"].(string), doc)
		if b.Size() == 512 {
			if err := idx.Batch(b); err != nil {
				tb.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := idx.Batch(b); err != nil {
		tb.Fatal(err)
	}
	return idx
}

// BenchmarkIngest compares bulk ingest of the sample catalogue through
// Quarry (stream, indexer, 4 shards, snapshot published, searchers caught
// up) with bleve indexing the same documents directly. Run with
// -benchtime=1x; the docs/s metric is the figure.
func BenchmarkIngest(b *testing.B) {
	docs := catalogNDJSON(b, catalog.DefaultSize)
	b.Run("bleve-direct", func(b *testing.B) {
		for b.Loop() {
			start := time.Now()
			idx := bleveDirect(b, b.TempDir()+"/idx", docs)
			b.ReportMetric(float64(catalog.DefaultSize)/time.Since(start).Seconds(), "docs/s")
			idx.Close()
		}
	})
	// quarry-serve: the searcher serves the indexer's replicas (the
	// default); separate-replicas: it keeps its own, every document
	// indexed twice in the process.
	for _, v := range []struct {
		name     string
		separate bool
	}{{"quarry-serve", false}, {"quarry-serve-separate-replicas", true}} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				n := startConfig(b, Config{SeparateReplicas: v.separate,
					Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
				c := n.Client()
				if _, err := c.CreateIndex(context.Background(), "menu", 4, catalog.Mapping()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				res, err := c.Bulk(context.Background(), "menu", bytes.NewReader(docs), client.BulkOptions{})
				if err != nil || res.Stored != catalog.DefaultSize {
					b.Fatal(res, err)
				}
				waitDocs(b, n, uint64(res.Stored))
				b.ReportMetric(float64(catalog.DefaultSize)/time.Since(start).Seconds(), "docs/s")
				b.StopTimer()
				n.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkShardSearch compares one shard's search over NATS (encode,
// in-process request/reply, searcher worker, decode) with the same bleve
// query on the same documents called directly. Each op is one query.
func BenchmarkShardSearch(b *testing.B) {
	docs := catalogNDJSON(b, catalog.DefaultSize)
	n := startRoles(b, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	loadCatalog(b, n, "one", 1, docs)
	c := n.Client()
	direct := bleveDirect(b, b.TempDir()+"/idx", docs)
	defer direct.Close()

	reqs := make([]*wire.ShardRequest, len(benchQueries))
	for i, q := range benchQueries {
		qj, _ := json.Marshal(map[string]string{"match": q})
		reqs[i] = &wire.ShardRequest{Query: qj, K: 10, Fields: []string{"name", "price"}}
	}
	run := func(b *testing.B, f func(*wire.ShardRequest)) {
		lat := make([]time.Duration, 0, 1<<16)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			start := time.Now()
			f(reqs[i%len(reqs)])
			if len(lat) < cap(lat) {
				lat = append(lat, time.Since(start))
			}
			i++
		}
		reportPercentiles(b, lat)
	}
	b.Run("bleve-direct", func(b *testing.B) {
		run(b, func(r *wire.ShardRequest) {
			sreq, err := shard.BuildRequest(r)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := direct.Search(sreq); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("nats-shard", func(b *testing.B) {
		nc := n.Conn()
		run(b, func(r *wire.ShardRequest) {
			msg := nats.NewMsg(subject.Shard("one", 0))
			if err := wire.Encode(msg, r, wire.CompressThreshold); err != nil {
				b.Fatal(err)
			}
			reply, err := nc.RequestMsg(msg, 5*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			var out wire.ShardResponse
			if err := wire.DecodeShardResponse(reply, &out); err != nil || len(out.Hits) == 0 {
				b.Fatal(err, reply.Header)
			}
		})
	})
	b.Run("broker", func(b *testing.B) {
		i := 0
		run(b, func(*wire.ShardRequest) {
			q := benchQueries[i%len(benchQueries)]
			i++
			if _, err := c.Search(context.Background(), "one", &api.SearchRequest{Q: q, Fields: []string{"name", "price"}}); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkFreshness measures the time from an upsert's publish to its
// being applied (and so searchable) on the searcher: with every role in the
// process, and with a searcher alone (no indexer or broker competing for
// the two cores).
func BenchmarkFreshness(b *testing.B) {
	for _, tc := range []struct {
		name string
		idx  *indexer.Config
		brk  *broker.Config
	}{
		{"all-roles", &indexer.Config{SnapshotInterval: -1}, &broker.Config{}},
		{"searcher-alone", nil, nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			n := startRoles(b, "", tc.idx, &searcher.Config{}, tc.brk)
			c := n.Client()
			ctx := context.Background()
			if _, err := c.CreateIndex(ctx, "f", 1, nil); err != nil {
				b.Fatal(err)
			}
			// No snapshot asked for: the searcher-alone node has no indexer.
			if _, err := c.Bulk(ctx, "f", ndjson(1000, "a"), client.BulkOptions{NoSnapshot: true}); err != nil {
				b.Fatal(err)
			}
			waitDocs(b, n, 1000)
			var lat, acks []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				seq, err := c.Put(ctx, "f", fmt.Appendf(nil, `{"id":"x%d","text":"fresh"}`, i))
				if err != nil {
					b.Fatal(err)
				}
				acks = append(acks, time.Since(start))
				for n.Searcher.Stats()[0].Seq < seq {
					// The measure is this wait: looked at every 50 µs, as
					// testwait's backoff (to 50 ms) would blur it.
					time.Sleep(50 * time.Microsecond)
				}
				lat = append(lat, time.Since(start))
				i++
			}
			reportPercentiles(b, lat)
			slices.Sort(acks)
			b.ReportMetric(float64(acks[len(acks)/2].Microseconds()), "ack-p50-µs")
			b.ReportMetric(float64(acks[len(acks)*99/100].Microseconds()), "ack-p99-µs")
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(p(0.50), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
	if len(lat) >= 1000 {
		b.ReportMetric(p(0.999), "p99.9-µs")
	}
}
