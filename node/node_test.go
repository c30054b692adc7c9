package node

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// startNode runs every role on an embedded server in a temp dir.
func startNode(t *testing.T) *Node {
	t.Helper()
	return startConfig(t, allRoles(Config{}))
}

// allRoles is cfg with each role it leaves nil run with its defaults, the
// indexer snapshotting only when asked (as startNode runs them).
func allRoles(cfg Config) Config {
	if cfg.Indexer == nil {
		cfg.Indexer = &indexer.Config{SnapshotInterval: -1}
	}
	if cfg.Searcher == nil {
		cfg.Searcher = &searcher.Config{}
	}
	if cfg.Broker == nil {
		cfg.Broker = &broker.Config{}
	}
	return cfg
}

func TestEndToEnd(t *testing.T) {
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "t", 3, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for i := range 300 {
		fmt.Fprintf(&buf, `{"id":"d%03d","name":"item %d","text":"%s"}`+"\n", i, i, []string{"spicy noodles", "mild soup", "spicy soup"}[i%3])
	}
	buf.WriteString("{not json}\n{\"name\":\"no id\"}\n")
	res, err := c.Bulk(ctx, "t", &buf, client.BulkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != 300 || res.Failed != 2 || res.Snapshot == nil || res.Snapshot.Docs != 300 {
		t.Fatalf("bulk: %+v", res)
	}
	waitFor(t, func() bool {
		r, err := c.Search(ctx, "t", &api.SearchRequest{Q: "spicy"})
		return err == nil && r.Total == 200
	})
	r, err := c.Search(ctx, "t", &api.SearchRequest{Q: "noodles", Size: 5, Fields: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != 100 || len(r.Hits) != 5 || r.Shards.Successful != 3 {
		t.Fatalf("search: %+v", r)
	}
	// Real-time path.
	start := time.Now()
	if _, err := c.Put(ctx, "t", []byte(`{"id":"fresh","text":"zanzibar"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r, err := c.Search(ctx, "t", &api.SearchRequest{Q: "zanzibar"})
		return err == nil && r.Total == 1
	})
	t.Logf("visible after %s", time.Since(start))
	if _, err := c.Delete(ctx, "t", "fresh"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r, err := c.Search(ctx, "t", &api.SearchRequest{Q: "zanzibar"})
		return err == nil && r.Total == 0
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testwait.Until(t, 15*time.Second, "condition", cond)
}
