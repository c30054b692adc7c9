package node

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/searcher"
)

func testLogger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("QUARRY_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// startRoles starts a node with the given roles; natsURL "" embeds NATS.
func startRoles(t testing.TB, natsURL string, idx *indexer.Config, srch *searcher.Config, brk *broker.Config) *Node {
	t.Helper()
	return startConfig(t, Config{NATSURL: natsURL, Indexer: idx, Searcher: srch, Broker: brk})
}

// startConfig starts a node from cfg, filling in what a test leaves out: a
// temp DataDir, an embedded NATS on a free port, an HTTP listener on one,
// the test logger, the test run's plugin cache (wasmtest.PluginCache). It waits until the node is ready and closes it when the
// test ends.
func startConfig(t testing.TB, cfg Config) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.NATSPort == 0 {
		cfg.NATSPort = -1
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	if cfg.PluginCacheDir == "" {
		cfg.PluginCacheDir = wasmtest.PluginCache(t)
	}
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	if err := n.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return n
}

// ndjson renders n documents d000..: every third is about noodles.
func ndjson(n int, prefix string) *bytes.Buffer {
	var buf bytes.Buffer
	for i := range n {
		fmt.Fprintf(&buf, `{"id":"%s%04d","name":"item %d","text":"%s"}`+"\n", prefix, i, i, []string{"spicy noodles", "mild soup", "spicy soup"}[i%3])
	}
	return &buf
}

// noodleIndex creates index (one shard) with ndjson(30, prefix) and waits
// until its 10 noodle documents are searchable.
func noodleIndex(tb testing.TB, c *client.Client, index, prefix string) {
	tb.Helper()
	if _, err := c.CreateIndex(context.Background(), index, 1, nil); err != nil {
		tb.Fatal(err)
	}
	mustBulk(tb, c, index, ndjson(30, prefix))
	waitTotal(tb, c, index, "noodles", 10)
}

func mustBulk(t testing.TB, c *client.Client, index string, body *bytes.Buffer) *client.BulkResult {
	t.Helper()
	res, err := c.Bulk(context.Background(), index, body, client.BulkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// total searches q and returns the hit total, or -1 on error.
func total(c *client.Client, index, q string) int {
	r, err := c.Search(context.Background(), index, &api.SearchRequest{Q: q})
	if err != nil || r.Shards.Failed > 0 {
		return -1
	}
	return int(r.Total)
}

func waitTotal(t testing.TB, c *client.Client, index, q string, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	got := -2
	for time.Now().Before(deadline) {
		if got = total(c, index, q); got == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("search %q on %s: total %d, want %d", q, index, got, want)
}

func mustRuntime(tb testing.TB) *plugins.Runtime {
	tb.Helper()
	rt, err := plugins.NewRuntime(context.Background(), plugins.Config{Logger: testLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// catalogNDJSON renders the first n documents of the demo catalogue.
func catalogNDJSON(tb testing.TB, n int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := catalog.WriteNDJSON(&buf, catalog.Generate(catalog.DefaultSeed, n)); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// waitDocs waits until the node's searcher serves docs documents in all.
func waitDocs(tb testing.TB, n *Node, docs uint64) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var sum uint64
	for time.Now().Before(deadline) {
		sum = 0
		for _, st := range n.Searcher.Stats() {
			sum += st.Docs
		}
		if sum == docs {
			return
		}
		time.Sleep(time.Millisecond)
	}
	tb.Fatalf("searcher serves %d documents, want %d", sum, docs)
}

// loadCatalog creates index with the catalogue mapping and shards, bulk
// loads docs (catalogue NDJSON, one document a line) and waits until the
// node's searcher serves them all.
func loadCatalog(tb testing.TB, n *Node, index string, shards int, docs []byte) *client.BulkResult {
	tb.Helper()
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, index, shards, catalog.Mapping()); err != nil {
		tb.Fatal(err)
	}
	want := bytes.Count(docs, []byte("\n"))
	res, err := c.Bulk(ctx, index, bytes.NewReader(docs), client.BulkOptions{})
	if err != nil || res.Stored != want {
		tb.Fatalf("bulk load %s: %+v %v, want %d stored", index, res, err, want)
	}
	waitDocs(tb, n, uint64(want))
	return res
}

// hedgeStats reads the broker's shard requests, hedges sent and hedges
// that answered first from the node's metrics, as an operator would.
func hedgeStats(tb testing.TB, n *Node) (requests, hedges, won int64) {
	tb.Helper()
	fams, err := n.Metrics.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range fams {
		if len(f.GetMetric()) == 0 {
			continue
		}
		v := int64(f.GetMetric()[0].GetCounter().GetValue())
		switch f.GetName() {
		case "quarry_broker_shard_requests_total":
			requests = v
		case "quarry_broker_hedges_total":
			hedges = v
		case "quarry_broker_hedges_won_total":
			won = v
		}
	}
	return requests, hedges, won
}
