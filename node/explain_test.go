package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/searcher"
)

// "explain": true gives every hit its score explanation, computed with
// the whole index's statistics (maxDocs is the index's document count,
// not a shard's), and never as a field; without it, no hit has one.
func TestExplain(t *testing.T) {
	t.Parallel()
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "ex", 3, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "ex", ndjson(30, "ex"))
	waitTotal(t, c, "ex", "noodles", 10)

	r, err := c.Search(ctx, "ex", &api.SearchRequest{Q: "spicy noodles", Explain: true, Fields: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Hits) == 0 {
		t.Fatal("no hits")
	}
	for _, h := range r.Hits {
		var e struct {
			Value    float64 `json:"value"`
			Message  string  `json:"message"`
			Children []any   `json:"children"`
		}
		if err := json.Unmarshal(h.Explanation, &e); err != nil || e.Message == "" || len(e.Children) == 0 {
			t.Errorf("hit %s: explanation %.200s (%v)", h.ID, h.Explanation, err)
		}
		if !strings.Contains(string(h.Explanation), "maxDocs=30)") {
			t.Errorf("hit %s: the explanation does not score with the index's 30 documents: %.300s", h.ID, h.Explanation)
		}
		if _, ok := h.Fields[wire.ExplanationField]; ok {
			t.Errorf("hit %s: the explanation is also a field", h.ID)
		}
		if h.Fields["text"] == nil {
			t.Errorf("hit %s lost its fields: %v", h.ID, h.Fields)
		}
	}
	r, err = c.Search(ctx, "ex", &api.SearchRequest{Q: "spicy noodles"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range r.Hits {
		if h.Explanation != nil {
			t.Errorf("hit %s has an explanation nobody asked for", h.ID)
		}
	}
}
