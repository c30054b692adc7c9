package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// TestDeletedIndexLeavesNothing: an index deleted and created again under
// its name, by another team, inherits nothing of the first: not its
// pipeline (whose plugin config holds team books' secret), its plugin
// versions or its events, and the brokers stop running its plugins.
func TestDeletedIndexLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "tmpx", Shards: 1, Team: "books"}); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "tmpx", ndjson(10, "t"))
	secret := json.RawMessage(`{"api_key":"BOOKS-SECRET"}`)
	if _, err := c.PushPlugin(ctx, "tmpx", "logger", wasmtest.WAT(t, loggingWAT), client.PushOptions{Kind: "rewriter", Activate: true, Step: api.StepSpec{Config: secret}}); err != nil {
		t.Fatal(err)
	}
	waitLive(t, 20*time.Second, n.Broker, c, "tmpx")
	if err := c.DeleteIndex(ctx, "tmpx"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "tmpx", Shards: 1, Team: "food"}); err != nil {
		t.Fatal(err)
	}
	pl, err := c.Plugins(ctx, "tmpx")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(pl)
	if len(pl.Versions) != 0 || (pl.Pipeline != nil && len(pl.Pipeline.Rewriters)+len(pl.Pipeline.Rankers) != 0) || strings.Contains(string(raw), "BOOKS-SECRET") {
		t.Fatalf("the new index inherited the deleted one's plugins: %s", raw)
	}
	if evs, err := c.PluginEvents(ctx, "tmpx"); err != nil || len(evs) != 0 {
		t.Fatalf("plugin events of the new index: %+v %v", evs, err)
	}
	mustBulk(t, c, "tmpx", ndjson(10, "u"))
	testwait.UntilErr(t, 20*time.Second, "a search of the new index runs no rewriter", func() error {
		resp, err := c.Search(ctx, "tmpx", &api.SearchRequest{Q: "noodles", Profile: true})
		if err != nil {
			return err
		}
		for _, st := range resp.Profile.Stages {
			if strings.HasPrefix(st.Name, "rewrite") {
				return &api.Error{Code: api.CodeConflict, Message: "stage " + st.Name}
			}
		}
		return nil
	})
}
