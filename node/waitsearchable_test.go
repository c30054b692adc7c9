package node

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
)

// TestWaitSearchable: a bulk load over HTTP with ?wait=searchable answers
// once a search finds every document it stored, as a Put followed by
// WaitSearchable does (the README's tour searched right after its load and
// found 69 of 1,344); any other wait= is refused.
func TestWaitSearchable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "ws", 3, nil); err != nil {
		t.Fatal(err)
	}
	code, body := httpDo(t, n, "POST", "/v1/indexes/ws/documents?wait=searchable", ndjson(600, "t").String())
	var res struct {
		Stored     int  `json:"stored"`
		Searchable bool `json:"searchable"`
	}
	if code != 200 || json.Unmarshal(body, &res) != nil || res.Stored != 600 || !res.Searchable {
		t.Fatalf("bulk with wait=searchable: %d %s", code, body)
	}
	r, err := c.Search(ctx, "ws", &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Size: 0})
	if err != nil || r.Total != 600 {
		t.Fatalf("right after the load: %+v %v, want all 600", r, err)
	}
	seq, err := c.Put(ctx, "ws", []byte(`{"id":"late","t":"zanzibar"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSearchable(ctx, "ws", seq); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Search(ctx, "ws", &api.SearchRequest{Q: "zanzibar"}); err != nil || r.Total != 1 {
		t.Fatalf("right after WaitSearchable: %+v %v", r, err)
	}
	if code, body := httpDo(t, n, "POST", "/v1/indexes/ws/documents?wait=for", `{"id":"x"}`); code != 400 || !strings.Contains(string(body), "searchable") {
		t.Fatalf("wait=for: %d %s", code, body)
	}
}

// Waiting until searchable is bounded when the caller gives no deadline
// (the HTTP door's requests have none): with no searcher to catch up, it
// ends at the client's SearchableWait, saying the write is stored.
func TestWaitSearchableBounded(t *testing.T) {
	t.Parallel()
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, nil, &broker.Config{})
	c, err := client.New(context.Background(), n.Conn(), client.Options{SearchableWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndex(context.Background(), "nosearcher", 1, nil); err != nil {
		t.Fatal(err)
	}
	seq, err := c.Put(context.Background(), "nosearcher", []byte(`{"id":"a","t":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.WaitSearchable(context.Background(), "nosearcher", seq)
	if !errors.Is(err, api.ErrTimeout) || !strings.Contains(err.Error(), "what was written is stored") || time.Since(start) > 10*time.Second {
		t.Fatalf("with no searcher and no deadline: %v after %s, want a timeout at the client's SearchableWait", err, time.Since(start))
	}
}
