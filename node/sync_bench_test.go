package node

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/embednats"
	"github.com/quarrysearch/quarry/searcher"
)

// BenchmarkSyncBulk measures what a durable acknowledgement costs bulk
// ingest, side by side in one run: JetStream syncing every write before
// acknowledging it (Quarry's default) against a two-minute background sync
// (nats-server's own default), each with the bulk client's atomic batches
// (the default, 1,000 documents: one sync a batch) and without (one
// publish, and one sync, a document). The 20,000-document sample catalogue
// goes to an index of 4 shards twice: "stream" into the stream alone (no
// role reading it: the write path's own cost; smaller batches too, for
// the cost of a batch), "serve" through `quarry serve` (indexer, searcher
// and broker in process, on the same two cores). acked-docs/s is the rate
// at which Bulk got every document acknowledged, searchable-docs/s the
// rate until the searcher served them all. Run with -benchtime=1x.
func BenchmarkSyncBulk(b *testing.B) {
	docs := catalogNDJSON(b, catalog.DefaultSize)
	type variant struct {
		name  string
		sync  time.Duration
		batch int
	}
	both := []variant{
		{"sync=always/batch=1000", embednats.SyncAlways, 0},
		{"sync=2m/batch=1000", 2 * time.Minute, 0},
		{"sync=always/batch=1", embednats.SyncAlways, 1},
		{"sync=2m/batch=1", 2 * time.Minute, 1},
	}
	for _, setup := range []struct {
		name     string
		variants []variant
	}{
		{"stream", append(both, variant{"sync=always/batch=250", embednats.SyncAlways, 250}, variant{"sync=always/batch=500", embednats.SyncAlways, 500})},
		{"serve", both},
	} {
		for _, v := range setup.variants {
			b.Run(setup.name+"/"+v.name, func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					cfg := Config{NATSSync: v.sync}
					if setup.name == "serve" {
						cfg.Indexer, cfg.Searcher, cfg.Broker = &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{}
					}
					n := startConfig(b, cfg)
					c := n.Client()
					if _, err := c.CreateIndex(context.Background(), "menu", 4, catalog.Mapping()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					start := time.Now()
					res, err := c.Bulk(context.Background(), "menu", bytes.NewReader(docs), client.BulkOptions{NoSnapshot: true, Batch: v.batch})
					if err != nil || res.Stored != catalog.DefaultSize {
						b.Fatal(res, err)
					}
					b.ReportMetric(float64(catalog.DefaultSize)/time.Since(start).Seconds(), "acked-docs/s")
					if setup.name == "serve" {
						waitDocs(b, n, uint64(res.Stored))
						b.ReportMetric(float64(catalog.DefaultSize)/time.Since(start).Seconds(), "searchable-docs/s")
					}
					b.StopTimer()
					n.Close()
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkSyncPut measures what a durable acknowledgement costs one
// upsert: the time from Put to its acknowledgement, one at a time, with
// JetStream syncing every write (the default) and with a two-minute
// background sync, side by side in one run, no role reading the stream.
// Each op is one Put.
func BenchmarkSyncPut(b *testing.B) {
	for _, v := range []struct {
		name string
		sync time.Duration
	}{
		{"sync=always", embednats.SyncAlways},
		{"sync=2m", 2 * time.Minute},
	} {
		b.Run(v.name, func(b *testing.B) {
			n := startConfig(b, Config{NATSSync: v.sync})
			c := n.Client()
			ctx := context.Background()
			if _, err := c.CreateIndex(ctx, "p", 1, nil); err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				if _, err := c.Put(ctx, "p", fmt.Appendf(nil, `{"id":"x%d","text":"fresh"}`, i)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				i++
			}
			reportPercentiles(b, lat)
		})
	}
}
