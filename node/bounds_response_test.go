package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// allocated runs f runs times and returns the fewest bytes the process
// allocated during one (runtime.MemStats.TotalAlloc): the fewest, since
// the node's own work in the background (a shard persisting or merging
// segments) allocates too. The test calling it must not run in parallel
// with others.
func allocated(runs int, f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range runs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// TestExplainBounded: a search asking to explain more hits (from+size)
// than --max-explain (default 100) is refused at once with
// query_too_complex naming the limit, before any shard sees it: no shard
// request is sent and next to nothing is allocated. Before, a search with
// "size":10000,"explain":true had every shard explain and send 10,000
// hits and the broker build the whole response before its size was
// checked (89–140 MB, 7–10 s and +1 GB RSS on the index; here a
// few megabytes, answered). A page within the limit is explained.
// Not parallel: it measures the process's allocations.
func TestExplainBounded(t *testing.T) {
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "expl", 2, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "expl", ndjson(3000, "e"))
	const q = "spicy noodles soup"

	// A page of the limit is explained: what an explanation weighs.
	r, err := c.Search(ctx, "expl", &api.SearchRequest{Q: q, From: 90, Size: 10, Explain: true})
	if err != nil || len(r.Hits) != 10 {
		t.Fatalf("from 90, size 10, explained: %v", err)
	}
	perHit := 0
	for _, h := range r.Hits {
		if len(h.Explanation) == 0 {
			t.Fatalf("hit %s has no explanation", h.ID)
		}
		perHit += len(h.Explanation) / len(r.Hits)
	}
	whole := uint64(r.Total) * uint64(perHit) // what size 10,000 would explain
	t.Logf("%d hits match, %d bytes of explanation each: %d bytes explained for size 10,000", r.Total, perHit, whole)

	sent := counter(t, n, "quarry_broker_shard_requests_total", nil)
	var took time.Duration
	alloc := allocated(3, func() {
		start := time.Now()
		_, err = c.Search(ctx, "expl", &api.SearchRequest{Q: q, Size: 10000, Explain: true})
		took = max(took, time.Since(start))
	})
	mustRefuse(t, "size 10,000 explained", err, api.CodeQueryTooComplex, "from+size 10000 hits, over the limit of 100 (the broker's --max-explain)")
	t.Logf("refused in %s, %d bytes allocated", took, alloc)
	if alloc > whole/8 {
		t.Errorf("the refusal allocated %d bytes, over an eighth of the %d bytes of explanations it would have built", alloc, whole)
	}
	if took > time.Second {
		t.Errorf("refused after %s", took)
	}
	if got := counter(t, n, "quarry_broker_shard_requests_total", nil); got != sent {
		t.Errorf("%g shard requests sent for it", got-sent)
	}
	// from counts: the shards would explain from+size hits each.
	_, err = c.Search(ctx, "expl", &api.SearchRequest{Q: q, From: 95, Size: 10, Explain: true})
	mustRefuse(t, "from 95, size 10, explained", err, api.CodeQueryTooComplex, "from+size 105 hits, over the limit of 100")
	// Over HTTP: 400, the limit named.
	code, body := httpDo(t, n, "POST", "/v1/indexes/expl/search", `{"q":"spicy","size":10000,"explain":true}`)
	if code != 400 || !bytes.Contains(body, []byte(`"code":"query_too_complex"`)) || !bytes.Contains(body, []byte("--max-explain")) {
		t.Errorf("HTTP: %d %s", code, body)
	}
	if got := counter(t, n, "quarry_broker_bound_refusals_total", map[string]string{"bound": "max_explain"}); got != 5 {
		t.Errorf("quarry_broker_bound_refusals_total{bound=max_explain} is %g, want 5", got)
	}
	// Unexplained, the same window is a search like any other.
	if r, err := c.Search(ctx, "expl", &api.SearchRequest{Q: q, Size: 10000}); err != nil || len(r.Hits) != int(r.Total) {
		t.Errorf("size 10,000 unexplained: %v", err)
	}
}

// blobIndex creates index (shards shards) of docs documents, each a
// title, a text of words and a stored, unindexed blob of blobBytes, and
// waits until they are searchable.
func blobIndex(t *testing.T, n *Node, index string, shards, docs, blobBytes int) {
	t.Helper()
	mapping := `{"default_mapping":{"dynamic":true,"properties":{
		"blob":{"fields":[{"name":"blob","type":"text","index":false,"store":true,"include_in_all":false}]}}}}`
	if _, err := n.Client().CreateIndex(context.Background(), index, shards, json.RawMessage(mapping)); err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("amber basil cedar dill elder fennel garlic hazel iris juniper kale lemon mint nutmeg olive pepper quince rue sage thyme")
	var b bytes.Buffer
	for i := range docs {
		blob := strings.Repeat(fmt.Sprintf("%c", 'a'+i%26), blobBytes)
		text := strings.Join(append(words[i%5:], words[:i%5]...), " ")
		fmt.Fprintf(&b, `{"id":"b%03d","title":"blob %d","text":%q,"blob":%q}`+"\n", i, i, text, blob)
	}
	mustBulk(t, n.Client(), index, &b)
}

// TestResponseBoundedWhileBuilt: a response is bounded while it is
// built, not after: a shard stops adding hits once its reply passes
// --max-shard-reply-bytes (their stored fields and explanations counted
// as each is added), the broker stops cutting the page once the response
// passes --max-response-bytes (fields, explanations, profile), each with
// response_too_large naming its bound; the search allocates a fraction of
// the response it would have built. Before, a shard counted only stored
// fields and against the NATS max_payload alone, explanations not at all,
// and the broker encoded the whole response before it looked at its size.
// Not parallel: it measures the process's allocations.
func TestResponseBoundedWhileBuilt(t *testing.T) {
	const shardCap, responseCap = 128 << 10, 32 << 10
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{MaxReplyBytes: shardCap}, Broker: &broker.Config{MaxResponseBytes: responseCap}})
	c := n.Client()
	ctx := context.Background()
	blobIndex(t, n, "big", 2, 100, 128<<10)
	blobIndex(t, n, "blobs", 4, 100, 24<<10)

	search := func(index, req string, runs int) (*api.SearchResponse, error, uint64) {
		t.Helper()
		var sreq api.SearchRequest
		if err := json.Unmarshal([]byte(req), &sreq); err != nil {
			t.Fatal(err)
		}
		var resp *api.SearchResponse
		var err error
		alloc := allocated(runs, func() { resp, err = c.Search(ctx, index, &sreq) })
		return resp, err, alloc
	}
	// Within both bounds.
	if _, err, _ := search("big", `{"q":"blob","size":100,"fields":["title"]}`, 1); err != nil {
		t.Fatalf("100 titles: %v", err)
	}
	// Each shard holds 50 of the hits, 6.4 MB of blobs: it stops past
	// 128 KiB, at its first.
	const whole = 100 * 128 << 10
	_, err, alloc := search("big", `{"q":"blob","size":100,"fields":["*"]}`, 3)
	mustRefuse(t, "a shard's fields", err, api.CodeResponseTooLarge, fmt.Sprintf("'s reply comes to more than %d bytes", shardCap), "--max-shard-reply-bytes")
	t.Logf("every field of 100 hits (%d bytes): refused, %d bytes allocated", whole, alloc)
	if alloc > whole/8 {
		t.Errorf("the search allocated %d bytes, over an eighth of the %d bytes of the response it would have built", alloc, whole)
	}
	// Each shard's 3 hits fit its reply, 3 hits do not fit the response,
	// which stops at its second.
	_, err, _ = search("blobs", `{"q":"blob","size":3,"fields":["*"]}`, 1)
	mustRefuse(t, "the page's fields", err, api.CodeResponseTooLarge, fmt.Sprintf("the response comes to more than %d bytes by hit 2 of 3", responseCap), "--max-response-bytes")

	// Explanations count: each document holds every word of the query.
	q := "amber basil cedar dill elder fennel garlic hazel iris juniper kale lemon mint nutmeg olive pepper quince rue sage thyme"
	one, err, _ := search("blobs", fmt.Sprintf(`{"q":%q,"size":1,"explain":true}`, q), 1)
	if err != nil || len(one.Hits) != 1 {
		t.Fatalf("one hit explained: %v", err)
	}
	e := len(one.Hits[0].Explanation)
	size := responseCap/e + 2 // over the response's bound, within a shard's
	if size*e > shardCap*3/4 {
		t.Fatalf("explanations of %d bytes: no page fits a shard's reply and not the response", e)
	}
	_, err, _ = search("blobs", fmt.Sprintf(`{"q":%q,"size":100,"explain":true}`, q), 1)
	mustRefuse(t, "a shard's explanations", err, api.CodeResponseTooLarge, fmt.Sprintf("'s reply comes to more than %d bytes", shardCap), "explanations")
	_, err, _ = search("blobs", fmt.Sprintf(`{"q":%q,"size":%d,"explain":true}`, q, size), 1)
	mustRefuse(t, "the page's explanations", err, api.CodeResponseTooLarge, fmt.Sprintf("the response comes to more than %d bytes by hit", responseCap))
	if got := counter(t, n, "quarry_searcher_replies_too_large_total", nil); got < 2 {
		t.Errorf("quarry_searcher_replies_too_large_total is %g, want at least 2", got)
	}
	if got := counter(t, n, "quarry_broker_bound_refusals_total", map[string]string{"bound": "max_response_bytes"}); got != 2 {
		t.Errorf("quarry_broker_bound_refusals_total{bound=max_response_bytes} is %g, want 2", got)
	}
}

// TestTeamSearchMemory: a team's searches in flight hold at most
// --team-max-search-memory on a broker. A search estimated over it alone
// is refused at once (429, naming the limit), and so is one that would
// take its team over it while another search of the team holds its
// share; another team's search is not touched; once the first is done
// its share is given back and the same search passes.
func TestTeamSearchMemory(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	const delay = 700 * time.Millisecond                                                                                                                                                           // every shard request: a search stays in flight
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{FaultDelay: delay}, Broker: &broker.Config{TeamMaxSearchMemory: limit, HeavyAfter: -1}}) // memory alone: no heavy-team turns
	c := n.Client()
	ctx := context.Background()
	for _, def := range []api.IndexDefinition{{Name: "fa", Shards: 2, Team: "alpha"}, {Name: "fb", Shards: 2, Team: "beta"}} {
		if _, err := c.CreateIndexDef(ctx, def); err != nil {
			t.Fatal(err)
		}
		mustBulk(t, c, def.Name, ndjson(30, def.Name))
	}
	held := func(team string) float64 {
		return counter(t, n, "quarry_broker_team_search_memory_bytes", map[string]string{"team": team})
	}
	// About 0.6 MiB each, estimated: 1,000 hits from each of 2 shards.
	page := &api.SearchRequest{Q: "spicy", Size: 1000}
	first := make(chan error, 1)
	go func() {
		_, err := c.Search(ctx, "fa", page)
		first <- err
	}()
	testwait.Until(t, 10*time.Second, "the first search holds its team's memory", func() bool { return held("alpha") > 0 })
	start := time.Now()
	_, err := c.Search(ctx, "fa", page)
	mustRefuse(t, "a second search of alpha", err, api.CodeOverloaded, "team alpha's searches in flight on this broker would hold", "over the team's limit of 1.0 MiB (the broker's --team-max-search-memory)")
	if took := time.Since(start); took >= delay {
		t.Errorf("refused after %s, not at once", took)
	}
	if _, err := c.Search(ctx, "fb", page); err != nil {
		t.Errorf("beta, meanwhile: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("the first search: %v", err)
	}
	testwait.Until(t, 10*time.Second, "alpha's memory given back", func() bool { return held("alpha") == 0 })
	if _, err := c.Search(ctx, "fa", page); err != nil {
		t.Errorf("the second search again, alone: %v", err)
	}
	// Alone over the limit: 10,000 hits from 2 shards, estimated 6 MiB.
	start = time.Now()
	_, err = c.Search(ctx, "fa", &api.SearchRequest{Q: "spicy", Size: 10000})
	mustRefuse(t, "10,000 hits", err, api.CodeOverloaded, "with this one's 6.", "estimated from its shards, hits, fields and explain")
	if took := time.Since(start); took >= delay {
		t.Errorf("refused after %s, not at once", took)
	}
	if got := counter(t, n, "quarry_broker_bound_refusals_total", map[string]string{"bound": "team_max_search_memory"}); got != 2 {
		t.Errorf("quarry_broker_bound_refusals_total{bound=team_max_search_memory} is %g, want 2", got)
	}
	if got := counter(t, n, "quarry_broker_team_search_memory_limit_bytes", nil); got != limit {
		t.Errorf("quarry_broker_team_search_memory_limit_bytes is %g", got)
	}
}
