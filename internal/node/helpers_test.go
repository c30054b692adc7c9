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
	"github.com/quarrysearch/quarry/internal/meta"
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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := Start(ctx, Config{DataDir: t.TempDir(), NATSURL: natsURL, NATSPort: -1, HTTPAddr: "127.0.0.1:0",
		Indexer: idx, Searcher: srch, Broker: brk, Logger: testLogger()})
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

func mustRuntime(t *testing.T) *plugins.Runtime { return mustRuntimeB(t) }

func mustRuntimeB(tb testing.TB) *plugins.Runtime {
	tb.Helper()
	rt, err := plugins.NewRuntime(context.Background(), plugins.Config{Logger: testLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func mustDigest(b []byte) string { return meta.PluginDigest(b) }
