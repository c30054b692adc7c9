package node

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
	"github.com/quarrysearch/quarry/searcher"
)

// skewedDocs are documents whose best matches for "dragon" (and highest
// rank) all sit on shard 0 of 4: 60 that say it two to six times, then
// 140 anywhere that say it once among more words.
func skewedDocs(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	best := 0
	for i := 0; best < 60; i++ {
		id := fmt.Sprintf("b%04d", i)
		if subject.ShardOf(id, 4) != 0 {
			continue
		}
		text := strings.Repeat("dragon ", best%5+2) + strings.Repeat("scale ", best%7)
		fmt.Fprintf(&buf, `{"id":%q,"text":%q,"rank":%d}`+"\n", id, text, 1000+best)
		best++
	}
	for i := range 140 {
		text := "dragon " + strings.Repeat("tail ", i%9+4)
		fmt.Fprintf(&buf, `{"id":"r%04d","text":%q,"rank":%d}`+"\n", i, text, i)
	}
	return &buf
}

// reverseRanker is a pipeline whose one ranker, at depth 50, puts its
// candidates in the reverse order: its page depends on the candidates
// ranked 41 to 50, the ones a shard's first round may leave out.
func reverseRanker(tb testing.TB, fields ...string) *broker.Pipeline {
	tb.Helper()
	f := &broker.PipelineFile{Rankers: []broker.StepFile{{Plugin: "reverse", RerankDepth: 50, Fields: fields}}}
	pl, err := broker.NativePipeline(f, map[string]plugins.NativeFactory{"reverse": func([]byte) (plugins.NativeHandler, error) {
		return func(in, out []byte) []byte {
			var req abi.RankRequest
			if err := abi.DecodeRankRequest(in, &req); err != nil {
				return abi.AppendError(out, err.Error())
			}
			resp := abi.RankResponse{Ranked: make([]abi.Ranked, len(req.Candidates))}
			for i := range req.Candidates {
				resp.Ranked[i] = abi.Ranked{Index: uint32(len(req.Candidates) - 1 - i), Score: float64(len(req.Candidates) - i)}
			}
			return abi.AppendRankResponse(out, &resp)
		}, nil
	}})
	if err != nil {
		tb.Fatal(err)
	}
	return pl
}

// A search over 4 shards whose best documents all sit on one returns what
// the same documents on one shard return: each shard is first asked for
// fewer than the K hits the merge needs (planner.Config.ShardDepth), and
// the one whose last hit still ranks in the merged top K is asked again
// for K. Ranked (the page is candidates 41-50 reversed), paged by from,
// and sorted with a cursor.
func TestShardDepthSkewed(t *testing.T) {
	t.Parallel()
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c := n.Client()
	ctx := context.Background()
	docs := skewedDocs(t)
	for name, shards := range map[string]int{"skew": 4, "one": 1} {
		if _, err := c.CreateIndex(ctx, name, shards, nil); err != nil {
			t.Fatal(err)
		}
		mustBulk(t, c, name, bytes.NewBuffer(docs.Bytes()))
	}
	pl := reverseRanker(t)

	cases := []struct {
		name   string
		ranked bool
		req    api.SearchRequest
		deepen bool // a second round is needed
	}{
		{"ranked", true, api.SearchRequest{Q: "dragon", Size: 10}, true},
		{"from 40", false, api.SearchRequest{Q: "dragon", From: 40, Size: 10}, true},
		{"sorted", false, api.SearchRequest{Q: "dragon", Sort: []string{"-rank"}, Size: 40}, true},
		{"small page", false, api.SearchRequest{Q: "dragon", Size: 5}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got, want *api.SearchResponse
			for _, index := range []string{"skew", "one"} {
				if tc.ranked {
					n.Broker.SetPipeline(index, pl)
				} else {
					n.Broker.SetPipeline(index, nil)
				}
				req := tc.req
				req.Profile = true
				resp, err := c.Search(ctx, index, &req)
				if err != nil {
					t.Fatal(err)
				}
				if index == "skew" {
					got = resp
				} else {
					want = resp
				}
			}
			if len(got.Hits) != tc.req.Size || got.Total != want.Total || got.Total != 200 {
				t.Fatalf("%d hits of %d, one shard: %d of %d", len(got.Hits), got.Total, len(want.Hits), want.Total)
			}
			for i := range want.Hits {
				g, w := got.Hits[i], want.Hits[i]
				// (Scores are exact, one index's, when they order the hits.)
				if g.ID != w.ID || tc.req.Sort == nil && !corpus.SameScore(g.Score, w.Score) {
					t.Fatalf("hit %d: %s %.9f, one shard %s %.9f\n4 shards: %v\none shard: %v", i, g.ID, g.Score, w.ID, w.Score, got.IDs(50), want.IDs(50))
				}
			}
			deepened := slices.ContainsFunc(got.Profile.Stages, func(s api.Stage) bool {
				return s.Name == "deepen" && strings.HasPrefix(s.Detail, "shards [0] asked again")
			})
			if deepened != tc.deepen {
				t.Fatalf("shard 0 asked again: %v, want %v (profile %+v)", deepened, tc.deepen, got.Profile.Stages)
			}
			if tc.req.Sort == nil {
				return
			}
			// The next page, from the cursor: shard 0 holds it all.
			for _, r := range []*api.SearchResponse{got, want} {
				if r.Next == "" {
					t.Fatal("no cursor")
				}
			}
			next := api.SearchRequest{Q: tc.req.Q, Sort: tc.req.Sort, Size: 20, SearchAfter: got.Next}
			g, err := c.Search(ctx, "skew", &next)
			if err != nil {
				t.Fatal(err)
			}
			next.SearchAfter = want.Next
			w, err := c.Search(ctx, "one", &next)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g.IDs(50), w.IDs(50)) || len(g.Hits) != 20 {
				t.Fatalf("next page %v, one shard %v", g.IDs(50), w.IDs(50))
			}
		})
	}
}

// BenchmarkShardDepth: a ranked search (a ranker over 50 candidates,
// reading two stored fields of each) on the 4-shard catalogue, with each
// shard first asked for 1.5 times its share of the 50 plus 5 (24: the
// default) and with every shard asked for all 50 (--shard-depth -1): two
// nodes of the same documents, measured in turn.
func BenchmarkShardDepth(b *testing.B) {
	docs := catalogNDJSON(b, catalog.DefaultSize)
	nodes := map[string]*Node{}
	for name, depth := range map[string]float64{"depth=1.5": 0, "depth=all": -1} {
		n := startRoles(b, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{ShardDepth: depth})
		if res := loadCatalog(b, n, "menu", e2eShards, docs); res.Snapshot != nil {
			e2eWaitGeneration(b, n, res.Snapshot.Generation)
		}
		n.Broker.SetPipeline("menu", reverseRanker(b, e2eFields...))
		nodes[name] = n
	}
	for _, name := range []string{"depth=1.5", "depth=all"} {
		b.Run(name, func(b *testing.B) {
			c := nodes[name].Client()
			search := func(q string, profile bool) *api.SearchResponse {
				r, err := c.Search(context.Background(), "menu", &api.SearchRequest{Q: q, Fields: e2eFields, Profile: profile})
				if err != nil || len(r.Hits) == 0 || len(r.Pipeline) > 0 {
					b.Fatal(err, r)
				}
				return r
			}
			deepened := 0
			for _, q := range benchQueries { // warm: statistics cached
				r := search(q, true)
				deepened += len(slices.DeleteFunc(r.Profile.Stages, func(s api.Stage) bool { return s.Name != "deepen" }))
			}
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				start := time.Now()
				search(benchQueries[i%len(benchQueries)], false)
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(start))
				}
				i++
			}
			reportPercentiles(b, lat)
			b.ReportMetric(float64(deepened)/float64(len(benchQueries)), "second-rounds/query")
		})
	}
}
