package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/control"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/testwait"
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
// the test logger, the test run's plugin cache (wasmtest.PluginCache),
// JetStream synced in the background (natstest.Sync). It waits until the node is ready and closes it when the
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
	if cfg.NATSSync == 0 && cfg.NATSConfigFile == "" {
		cfg.NATSSync = natstest.Sync
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

// httpRequest sends one HTTP request, header a list of name, value pairs
// ("Host" sets the request's host), and returns its status, headers and
// body.
func httpRequest(t testing.TB, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// storeIndex creates an index on a node that runs neither a broker nor
// an indexer, so nothing serves the control API (client.CreateIndexDef):
// as the control API does.
func storeIndex(t testing.TB, n *Node, def api.IndexDefinition) api.IndexDefinition {
	t.Helper()
	body, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	def, err = control.CreateIndex(context.Background(), n.store, body)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// mustBulk bulk loads body into index without asking for a snapshot
// and waits until what it stored is searchable (from the stream), so
// body must hold every document of the index; mustBulkSnapshot ends the
// load with a snapshot instead, for tests of what a snapshot holds.
func mustBulk(t testing.TB, c *client.Client, index string, body *bytes.Buffer) *client.BulkResult {
	t.Helper()
	res := bulk(t, c, index, body, client.BulkOptions{NoSnapshot: true})
	waitIndexed(t, c, index, res.Stored)
	return res
}

// mustBulkSnapshot is mustBulk ending with a new generation.
func mustBulkSnapshot(t testing.TB, c *client.Client, index string, body *bytes.Buffer) *client.BulkResult {
	t.Helper()
	return bulk(t, c, index, body, client.BulkOptions{})
}

func bulk(t testing.TB, c *client.Client, index string, body *bytes.Buffer, opts client.BulkOptions) *client.BulkResult {
	t.Helper()
	res, err := c.Bulk(context.Background(), index, body, opts)
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
	got := -2
	testwait.UntilErr(t, 20*time.Second, fmt.Sprintf("search %q on %s", q, index), func() error {
		if got = total(c, index, q); got != want {
			return fmt.Errorf("total %d, want %d", got, want)
		}
		return nil
	})
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
	var sum uint64
	testwait.UntilErr(tb, 2*time.Minute, "the searcher's documents", func() error {
		sum = 0
		for _, st := range n.Searcher.Stats() {
			sum += st.Docs
		}
		if sum != docs {
			return fmt.Errorf("it serves %d documents, want %d", sum, docs)
		}
		return nil
	})
}

// waitIndexed waits until a search of index matches its docs documents
// on every shard: what a bulk load stored is searchable.
func waitIndexed(tb testing.TB, c *client.Client, index string, docs int) {
	tb.Helper()
	all := &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`)}
	testwait.UntilErr(tb, 2*time.Minute, fmt.Sprintf("%d documents searchable in %s", docs, index), func() error {
		r, err := c.Search(context.Background(), index, all)
		switch {
		case err != nil:
			return err
		case r.Shards.Failed > 0 || r.Total != uint64(docs):
			return fmt.Errorf("%d found, %d of %d shards failed", r.Total, r.Shards.Failed, r.Shards.Total)
		}
		return nil
	})
}

// loadCatalog creates index with the catalogue mapping and shards, bulk
// loads docs (catalogue NDJSON, one document a line) and waits until the
// node's searcher serves them all. A test's load asks for no snapshot
// (merging the segments and uploading them took most of many tests'
// time); a benchmark's ends with one, so that it measures merged
// segments as a loaded index has them, and so does loadCatalogSnapshot's.
func loadCatalog(tb testing.TB, n *Node, index string, shards int, docs []byte) *client.BulkResult {
	tb.Helper()
	_, bench := tb.(*testing.B)
	return loadCatalogWith(tb, n, index, shards, docs, bench)
}

// loadCatalogSnapshot is loadCatalog ending with a snapshot.
func loadCatalogSnapshot(tb testing.TB, n *Node, index string, shards int, docs []byte) *client.BulkResult {
	tb.Helper()
	return loadCatalogWith(tb, n, index, shards, docs, true)
}

func loadCatalogWith(tb testing.TB, n *Node, index string, shards int, docs []byte, snapshot bool) *client.BulkResult {
	tb.Helper()
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, index, shards, catalog.Mapping()); err != nil {
		tb.Fatal(err)
	}
	want := bytes.Count(docs, []byte("\n"))
	res, err := c.Bulk(ctx, index, bytes.NewReader(docs), client.BulkOptions{NoSnapshot: !snapshot})
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

// mustToken creates an HTTP API token (team's, or an operator's) and
// returns it.
func mustToken(tb testing.TB, c *client.Client, team string, operator bool, name string, opts ...client.TokenOption) string {
	tb.Helper()
	tok, _, err := c.CreateToken(context.Background(), team, operator, name, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}
