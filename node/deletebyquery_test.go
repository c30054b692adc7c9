package node

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

// TestDeleteByQuery: every document a query finds is deleted, over 3
// shards, with the query as written: the index's live rewriter (it adds
// " spicy" to every q, which would also find the spicy noodles) has no
// say. Max stops it, saying more match; over HTTP the same; a query that
// names nothing is refused.
func TestDeleteByQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "dq", 3, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "dq", ndjson(300, "d")) // 100 each of spicy noodles, mild soup, spicy soup
	v, err := c.PushPlugin(ctx, "dq", "suffix", watModule(t), client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil {
		t.Fatal(err)
	}
	waitRewriter(t, n.Broker, "dq", short(v.Digest))
	if r, err := c.Search(ctx, "dq", &api.SearchRequest{Q: "soup", Size: api.NoHits}); err != nil || r.Total != 300 {
		t.Fatalf("the live pipeline's soup (soup spicy) finds %v %v, want all 300", r, err)
	}

	if n, err := c.CountByQuery(ctx, "dq", client.DeleteQuery{Q: "mild"}); err != nil || n != 100 {
		t.Fatalf("count of mild: %d %v", n, err)
	}
	res, err := c.DeleteByQuery(ctx, "dq", client.DeleteQuery{Q: "mild", Max: 30})
	if err != nil || res.Deleted != 30 || !res.More || res.LastSeq == 0 {
		t.Fatalf("delete 30 of 100 mild: %+v %v", res, err)
	}
	res, err = c.DeleteByQuery(ctx, "dq", client.DeleteQuery{Q: "soup"})
	if err != nil || res.Deleted != 170 || res.More {
		t.Fatalf("delete the soups: %+v %v, want the 170 left", res, err)
	}
	total := func(q string) uint64 {
		t.Helper()
		r, err := c.Search(ctx, "dq", &api.SearchRequest{Query: json.RawMessage(q), Size: api.NoHits})
		if err != nil {
			t.Fatal(err)
		}
		return r.Total
	}
	if all, noodles := total(`{"match_all":{}}`), total(`{"match":"noodles","field":"text"}`); all != 100 || noodles != 100 {
		t.Fatalf("after: %d documents, %d noodles; want the 100 noodles alone", all, noodles)
	}

	// Over HTTP, with a filter.
	code, _, body := httpRequest(t, "POST", "http://"+n.HTTPAddr+"/v1/indexes/dq/delete-by-query", `{"query":{"match":"noodles","field":"text"},"max":10}`, "Content-Type", "application/json")
	var hr client.DeleteResult
	if err := json.Unmarshal([]byte(body), &hr); err != nil || code != 200 || hr.Deleted != 10 || !hr.More {
		t.Fatalf("HTTP delete-by-query: %d %s", code, body)
	}
	for _, bad := range []struct {
		q   client.DeleteQuery
		msg string
	}{
		{client.DeleteQuery{}, "give q, query or filter"},
		{client.DeleteQuery{Q: "x", Max: client.MaxDeleteMax + 1}, "max must be between"},
		{client.DeleteQuery{Query: json.RawMessage(`{"match":5}`)}, "query"},
	} {
		if _, err := c.DeleteByQuery(ctx, "dq", bad.q); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("delete by %+v: %v, want bad request saying %q", bad.q, err, bad.msg)
		}
	}
	if all := total(`{"match_all":{}}`); all != 90 {
		t.Fatalf("after the HTTP delete and the refusals: %d documents, want 90", all)
	}
}
