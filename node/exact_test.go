package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/searcher"
)

// Exact scoring's reference: one bleve index (plain scorch, not Quarry's
// index type) holding every document, searched with statistics counted
// directly from its postings (postingsStats). Quarry's definition of BM25
// is a function of the documents alone (docs/RATIONALE.md, "Exact
// distributed scoring"); bleve's own statistics are not (they move with
// segment merges and sharding).

// postingsStats is the reference's statistics (corpus.PostingsStats).
func postingsStats(tb testing.TB, idx bleve.Index, fields ...string) *search.BM25Stats {
	tb.Helper()
	st, err := corpus.PostingsStats(idx, fields...)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// catalogReference is the reference for catalogue documents (NDJSON): one
// bleve index holding them all, closed when the test ends, and its
// statistics from the postings.
func catalogReference(tb testing.TB, docs []byte) (bleve.Index, *search.BM25Stats) {
	tb.Helper()
	idx := bleveDirect(tb, tb.TempDir()+"/reference", docs)
	tb.Cleanup(func() { idx.Close() })
	return idx, postingsStats(tb, idx)
}

// refSearch runs req on the reference, scored with st (nil: bleve's own
// statistics), ordered by score then id, from 0 to from+size+extra.
func refSearch(tb testing.TB, idx bleve.Index, st *search.BM25Stats, req api.SearchRequest, extra int) *bleve.SearchResult {
	tb.Helper()
	q, err := planner.BuildQuery(&req, api.QuerySettings{}, nil, refTypoWords(tb, idx, &req))
	if err != nil {
		tb.Fatal(err)
	}
	sreq := bleve.NewSearchRequestOptions(q, req.From+req.Size+extra, 0, false)
	sreq.SortBy([]string{"-_score", "_id"})
	if st != nil {
		sreq.PreSearchData = map[string]any{search.BM25PreSearchDataKey: st}
	}
	res, err := idx.Search(sreq)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// refTypoWords are the words of req's q that take typos on the reference
// under the default typo tolerance ("auto"), read from its own dictionary
// as a broker reads them from the statistics: those it does not hold.
func refTypoWords(tb testing.TB, idx bleve.Index, req *api.SearchRequest) map[string][]string {
	tb.Helper()
	cands := planner.TypoCandidates(req, api.QuerySettings{})
	if cands == nil {
		return nil
	}
	adv, err := idx.Advanced()
	if err != nil {
		tb.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	m := idx.Mapping()
	docFreq := map[string]map[string]uint64{}
	for field, words := range cands {
		docFreq[field] = map[string]uint64{}
		a := m.AnalyzerNamed(m.AnalyzerNameForPath(field))
		for _, w := range words {
			for _, tok := range a.Analyze([]byte(w)) {
				tfr, err := r.TermFieldReader(context.Background(), tok.Term, field, false, false, false)
				if err != nil {
					tb.Fatal(err)
				}
				docFreq[field][string(tok.Term)] = tfr.Count()
				tfr.Close()
			}
		}
	}
	return planner.UnknownWords(cands, docFreq, m)
}

// hitsDiffer says where got (the hits from position from on) differs from
// want (the reference from position 0): "" when each hit is the
// reference's at its position, with a score within a relative 1e-9. Hits
// whose scores are within that of each other are a tie (sums of the same
// terms in another order may differ in the last bit), and a tie's members
// may come in any order, and be cut at another member by the page.
func hitsDiffer(got []api.Hit, want []*search.DocumentMatch, from int) string {
	seen := map[string]bool{}
	for k, h := range got {
		p := from + k
		if p >= len(want) {
			return fmt.Sprintf("hit %d: %s %.12f, the reference has %d hits", p, h.ID, h.Score, len(want))
		}
		lo, hi := p, p+1
		for lo > 0 && corpus.SameScore(want[lo-1].Score, want[p].Score) {
			lo--
		}
		for hi < len(want) && corpus.SameScore(want[hi].Score, want[p].Score) {
			hi++
		}
		in := slices.ContainsFunc(want[lo:hi], func(w *search.DocumentMatch) bool { return w.ID == h.ID })
		if !in || seen[h.ID] || !corpus.SameScore(h.Score, want[p].Score) {
			return fmt.Sprintf("hit %d: %s %.12f, the reference %s %.12f", p, h.ID, h.Score, want[p].ID, want[p].Score)
		}
		seen[h.ID] = true
	}
	return ""
}

// exactCases are the query kinds exact distributed scoring must cover, on
// the catalogue.
var exactCases = []struct {
	name string
	req  api.SearchRequest
}{
	{"text", api.SearchRequest{Q: "spicy noodles"}},
	{"match", api.SearchRequest{Query: json.RawMessage(`{"match":"chicken curry","field":"name"}`)}},
	{"term", api.SearchRequest{Query: json.RawMessage(`{"term":"thai","field":"cuisine"}`)}},
	{"phrase", api.SearchRequest{Query: json.RawMessage(`{"match_phrase":"rice noodles","field":"description"}`)}},
	{"boolean", api.SearchRequest{Query: json.RawMessage(`{
		"must":{"conjuncts":[{"match":"chicken","field":"name"}]},
		"should":{"disjuncts":[{"match":"spicy","field":"description"},{"match":"garlic","field":"description"}]},
		"must_not":{"disjuncts":[{"term":"indian","field":"cuisine"}]}}`)}},
	{"filtered", api.SearchRequest{Q: "vegan burger", Filter: json.RawMessage(`{"min":5,"max":15,"field":"price"}`)}},
	{"second page", api.SearchRequest{Q: "pizza", From: 20, Size: 20}},
	{"fuzzy", api.SearchRequest{Query: json.RawMessage(`{"match":"noodels","fuzziness":1,"field":"name"}`)}},
	{"prefix", api.SearchRequest{Query: json.RawMessage(`{"prefix":"chick","field":"description"}`)}},
	{"typos", api.SearchRequest{Q: "chiken noodels", Typos: new(true)}},
	{"as you type", api.SearchRequest{Q: "spicy nood", Prefix: new(true)}},
}

// A query over 4 shards of the catalogue returns the same ids, in the same
// order, with the same scores as the reference (one index holding every
// document, statistics from its postings).
func TestExactDistributedScoring(t *testing.T) {
	t.Parallel()
	docs := catalogNDJSON(t, 3000)
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	loadCatalog(t, n, "menu", 4, docs)
	c := n.Client()
	ctx := context.Background()
	single, ref := catalogReference(t, docs)

	// The same documents scored per shard (scoring "shard": no
	// statistics phase) differ: this is what the test guards against.
	differs := false

	for _, tc := range exactCases {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Size == 0 {
				req.Size = 20
			}
			req.TimeoutMS = 30000 // time for the statistics phase under -race
			got, err := c.Search(ctx, "menu", &req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Shards.Successful != 4 {
				t.Fatalf("shards: %+v", got.Shards)
			}
			want := refSearch(t, single, ref, req, 20)
			if got.Total != want.Total {
				t.Errorf("total %d, one index %d", got.Total, want.Total)
			}
			if len(got.Hits) != min(req.Size, len(want.Hits)-req.From) || len(got.Hits) == 0 {
				t.Fatalf("%d hits, one index %d", len(got.Hits), len(want.Hits))
			}
			if diff := hitsDiffer(got.Hits, want.Hits, req.From); diff != "" {
				t.Fatal(diff)
			}
			shardReq := req
			shardReq.Scoring = api.ScoringShard
			lr, err := c.Search(ctx, "menu", &shardReq)
			if err != nil {
				t.Fatal(err)
			}
			if hitsDiffer(lr.Hits, want.Hits, req.From) != "" {
				differs = true
			}
		})
	}
	if !differs {
		t.Error("per-shard scoring matched one index on every query: the test data no longer shows the difference")
	}
}

// corpusCases are the query kinds exact scoring covers, from the generated
// corpus's own words.
func corpusCases(tb testing.TB, g *corpus.Generator, docs []map[string]any) []struct {
	name string
	req  api.SearchRequest
} {
	tb.Helper()
	w := g.Words()
	long := func(from, n int) string { // a word of n letters or more
		for _, x := range w[from:] {
			if len(x) >= n {
				return x
			}
		}
		tb.Fatal("no long word")
		return ""
	}
	typo := func(s string) string { // one letter changed
		b := []byte(s)
		b[len(b)/2] = 'q'
		return string(b)
	}
	q := func(s string, args ...any) json.RawMessage { return json.RawMessage(fmt.Sprintf(s, args...)) }
	phrase := strings.Join(strings.Fields(docs[17]["body"].(string))[3:5], " ")
	var wild string // a pattern from a title's word: first two letters * last
	for _, x := range strings.Fields(docs[5]["title"].(string)) {
		if len(x) >= 5 && wild == "" {
			wild = x[:2] + "*" + x[len(x)-1:]
		}
	}
	return []struct {
		name string
		req  api.SearchRequest
	}{
		{"text", api.SearchRequest{Q: w[3] + " " + w[150]}},
		{"match", api.SearchRequest{Query: q(`{"match":"%s %s","field":"body"}`, w[3], w[120])}},
		{"term", api.SearchRequest{Query: q(`{"term":%q,"field":"title"}`, w[10])}},
		{"phrase", api.SearchRequest{Query: q(`{"match_phrase":%q,"field":"body"}`, phrase)}},
		{"boolean", api.SearchRequest{Query: q(`{"must":{"conjuncts":[{"match":%q,"field":"title"}]},"should":{"disjuncts":[{"match":%q,"field":"body"},{"match":%q,"field":"body"}]},"must_not":{"disjuncts":[{"term":%q,"field":"body"}]}}`, w[5], w[30], w[300], w[2])}},
		{"filtered", api.SearchRequest{Q: w[7] + " " + w[77], Filter: q(`{"min":1950,"max":2000,"field":"year"}`)}},
		{"paged", api.SearchRequest{Q: w[1] + " " + w[40], From: 20, Size: 20}},
		{"fuzzy", api.SearchRequest{Query: q(`{"match":"%s %s","fuzziness":1,"field":"title"}`, typo(long(50, 6)), w[40])}},
		{"fuzzy term", api.SearchRequest{Query: q(`{"term":%q,"fuzziness":2,"field":"body"}`, typo(long(200, 7)))}},
		{"prefix", api.SearchRequest{Query: q(`{"prefix":%q,"field":"body"}`, long(300, 6)[:3])}},
		{"wildcard", api.SearchRequest{Query: q(`{"wildcard":%q,"field":"title"}`, wild)}},
		{"regexp", api.SearchRequest{Query: q(`{"regexp":"%s[a-z]{2,5}","field":"body"}`, w[60][:2])}},
		{"query string", api.SearchRequest{Query: q(`{"query":"+title:%s %s %s~1 body:%s*"}`, w[4], w[60], typo(long(30, 6)), long(500, 5)[:3])}},
		{"numeric scored", api.SearchRequest{Query: q(`{"disjuncts":[{"match":%q,"field":"body"},{"min":1950,"max":1960,"field":"year"}]}`, w[20])}},
		{"date scored", api.SearchRequest{Query: q(`{"disjuncts":[{"match":%q,"field":"body"},{"start":"1990-01-01T00:00:00Z","end":"1995-06-01T00:00:00Z","field":"date"}]}`, w[21])}},
		{"geo scored", api.SearchRequest{Query: q(`{"disjuncts":[{"match":%q,"field":"body"},{"location":{"lat":10,"lon":20},"distance":"700km","field":"loc"}]}`, w[22])}},
	}
}

// corpusState is the generated corpus as Quarry holds it in every index
// of TestExactScoringCorpus, and the reference built from it.
type corpusState struct {
	n      *Node
	last   map[string]map[int]uint64 // index → shard → the last sequence written
	counts []int
	g      *corpus.Generator
	docs   map[string]map[string]any
	ref    bleve.Index
	stats  *search.BM25Stats
}

// close closes the reference.
func (s *corpusState) close() {
	if s.ref != nil {
		s.ref.Close()
	}
}

func indexName(shards int) string { return fmt.Sprintf("corpus%d", shards) }

// write puts docs (a bulk ingest, without a snapshot) and deletes ids in
// every index, then deletes an id that was never written in each shard
// (its stream sequence comes after every write of that shard) and waits
// until every searcher has applied those; then makes the reference anew
// (unless noRef: another write follows at once).
func (s *corpusState) write(tb testing.TB, put []map[string]any, del []string, noRef bool) {
	tb.Helper()
	// A loaded machine can take the stream seconds to acknowledge.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := s.n.Client()
	var buf bytes.Buffer
	for _, d := range put {
		b, _ := json.Marshal(d)
		buf.Write(append(b, '\n'))
	}
	// The indexes are written at once: each write waits for its sync.
	type written struct {
		index string
		last  map[int]uint64
		err   error
	}
	done := make(chan written, len(s.counts))
	for _, shards := range s.counts {
		go func() {
			index := indexName(shards)
			w := written{index: index, last: map[int]uint64{}}
			defer func() { done <- w }()
			if len(put) > 0 {
				res, err := c.Bulk(ctx, index, bytes.NewReader(buf.Bytes()), client.BulkOptions{NoSnapshot: true})
				if err != nil || res.Stored != len(put) {
					w.err = fmt.Errorf("bulk into %s: %+v %v", index, res, err)
					return
				}
			}
			for _, id := range del {
				if _, w.err = c.Delete(ctx, index, id); w.err != nil {
					return
				}
			}
			for k := 0; len(w.last) < shards; k++ {
				id := fmt.Sprintf("never-%d", k)
				if _, ok := w.last[subject.ShardOf(id, shards)]; ok {
					continue
				}
				seq, err := c.Delete(ctx, index, id)
				if w.err = err; err != nil {
					return
				}
				w.last[subject.ShardOf(id, shards)] = seq
			}
		}()
	}
	for range s.counts {
		w := <-done
		if w.err != nil {
			tb.Fatal(w.err)
		}
		s.waitApplied(tb, w.index, w.last)
		s.last[w.index] = w.last
	}
	for _, d := range put {
		s.docs[d["id"].(string)] = d
	}
	for _, id := range del {
		delete(s.docs, id)
	}
	if !noRef {
		s.updateReference(tb)
	}
}

// waitApplied waits until the searcher's replica of each shard has applied
// its sequence in last.
func (s *corpusState) waitApplied(tb testing.TB, index string, last map[int]uint64) {
	tb.Helper()
	testwait.UntilErr(tb, 2*time.Minute, index+": searchers apply the writes", func() error {
		done := 0
		for _, st := range s.n.Searcher.Stats() {
			if st.Index == index && st.Seq >= last[st.Shard] {
				done++
			}
		}
		if done == len(last) || len(last) == 0 {
			return nil
		}
		return fmt.Errorf("%+v, want %v", s.n.Searcher.Stats(), last)
	})
}

// updateReference makes the reference afresh: one plain scorch index of
// the documents, built in one batch (one segment, so no merge runs and no
// term of a deleted document stays in its dictionary); then it counts the
// statistics.
func (s *corpusState) updateReference(tb testing.TB) {
	tb.Helper()
	if s.ref != nil {
		s.ref.Close()
	}
	m, err := indexmap.Build(corpus.Mapping("bm25"))
	if err != nil {
		tb.Fatal(err)
	}
	if s.ref, err = bleve.NewUsing(tb.TempDir()+"/ref", m, scorch.Name, scorch.Name, map[string]any{"unsafe_batch": true}); err != nil {
		tb.Fatal(err)
	}
	b := s.ref.NewBatch()
	for id, d := range s.docs {
		if err := b.Index(id, d); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.ref.Batch(b); err != nil {
		tb.Fatal(err)
	}
	s.stats = postingsStats(tb, s.ref, "title", "body", "_all", "year", "date", "loc")
}

// check runs every case on every index and compares with the reference.
func (s *corpusState) check(t *testing.T, state string, cases []struct {
	name string
	req  api.SearchRequest
}) {
	t.Helper()
	ctx := context.Background()
	c := s.n.Client()
	for _, tc := range cases {
		req := tc.req
		if req.Size == 0 {
			req.Size = 20
		}
		// Time enough for the statistics phase (a quarter of it) on a
		// loaded machine under -race: past it, the shards score with
		// their own statistics (TestStatsPhaseTimeout).
		req.TimeoutMS = 30000
		want := refSearch(t, s.ref, s.stats, req, 20)
		if len(want.Hits) <= req.From {
			t.Fatalf("%s: %s matches too little in the reference (%d hits)", tc.name, req.Query, len(want.Hits))
		}
		for _, shards := range s.counts {
			t.Run(fmt.Sprintf("%s/%d shards/%s", state, shards, tc.name), func(t *testing.T) {
				got, err := c.Search(ctx, indexName(shards), &req)
				if err != nil {
					t.Fatal(err)
				}
				if got.Shards.Successful != shards {
					t.Fatalf("shards: %+v", got.Shards)
				}
				if got.Total != want.Total {
					t.Errorf("total %d, reference %d", got.Total, want.Total)
				}
				if wantN := min(req.Size, len(want.Hits)-req.From); len(got.Hits) != wantN {
					t.Fatalf("%d hits, reference %d", len(got.Hits), wantN)
				}
				if diff := hitsDiffer(got.Hits, want.Hits, req.From); diff != "" {
					// Once more with a profile: it says whether the
					// statistics were cached, fetched or incomplete.
					again := req
					again.Profile = true
					if r2, err := c.Search(ctx, indexName(shards), &again); err == nil && r2.Profile != nil {
						t.Logf("asked again: %q; profile %+v", hitsDiffer(r2.Hits, want.Hits, req.From), r2.Profile.Stages)
					}
					t.Fatalf("%s %s: %s", req.Q, req.Query, diff)
				}
			})
		}
	}
}

// startCorpus starts a node with the broker's configuration bcfg, the
// corpus's indexes of each count of shards in counts, size documents
// written to each; it returns them and the queries that check them. The reference
// index is not built yet (updateReference, or the next write, builds it).
func startCorpus(t *testing.T, size int, counts []int, bcfg *broker.Config) (s *corpusState, all []map[string]any, cases []struct {
	name string
	req  api.SearchRequest
}) {
	t.Helper()
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, bcfg)
	ctx := context.Background()
	s = &corpusState{n: n, counts: counts, g: corpus.New(corpus.Config{Seed: 21, BodyMax: 90}), docs: map[string]map[string]any{}, last: map[string]map[int]uint64{}}
	t.Cleanup(s.close)
	all = s.g.Records(size)
	for _, shards := range s.counts {
		if _, err := n.Client().CreateIndex(ctx, indexName(shards), shards, corpus.Mapping("bm25")); err != nil {
			t.Fatal(err)
		}
	}
	s.write(t, all, nil, true)
	return s, all, corpusCases(t, s.g, all)
}

// TestStatsFreshness: cached statistics are fetched again within the
// broker's bounds (Config.StatsMaxUpdates, Config.StatsMaxAge), so
// scores are exact again once documents changed past either.
func TestStatsFreshness(t *testing.T) {
	t.Parallel()
	// 10% more documents is more than the bound's 10 updates on each
	// of 7 shards only from about 700 documents.
	const size = 700
	// Two shard counts: statistics summed over shards is what goes
	// stale (TestExactScoringCorpus has 1, 2, 4 and 7).
	freshnessShards := []int{2, 7}
	t.Run("updates", func(t *testing.T) {
		t.Parallel()
		// At most 10 updates of any shard's missed: 10% more documents,
		// and the very next searches are exact (with the bound at
		// MaxStatsMaxUpdates, 24 of them are not).
		s, _, cases := startCorpus(t, size, freshnessShards, &broker.Config{StatsMaxUpdates: 10, StatsMaxAge: time.Hour})
		s.updateReference(t)
		s.check(t, "cached", cases)
		more := s.g.Records(size / 10)
		s.write(t, more, nil, false)
		s.check(t, "10% more", cases)
	})
	t.Run("age", func(t *testing.T) {
		t.Parallel()
		// A few updates (under the bound), then the bound's time: exact
		// again.
		s, _, cases := startCorpus(t, size, freshnessShards, &broker.Config{StatsMaxUpdates: broker.MaxStatsMaxUpdates, StatsMaxAge: 300 * time.Millisecond})
		s.updateReference(t)
		s.check(t, "cached", cases[:6])
		s.write(t, []map[string]any{s.g.Next().Record(), s.g.Next().Record(), s.g.Next().Record()}, nil, false)
		// The bound under test is a time: the cached statistics age past
		// StatsMaxAge, with nothing else to wait for.
		time.Sleep(300 * time.Millisecond)
		s.check(t, "aged", cases[:6])
	})
}

func apiHits(in []*search.DocumentMatch) []api.Hit {
	out := make([]api.Hit, len(in))
	for i, h := range in {
		out[i] = api.Hit{ID: h.ID, Score: h.Score}
	}
	return out
}

// TestStatsPhaseTimeout: when a shard does not give its term statistics in
// time, the search still answers, scored with each shard's own statistics,
// and the profile says so. (Partial sums used to reach the shards, which
// then failed with "field stat for bm25 not present".)
func TestStatsPhaseTimeout(t *testing.T) {
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1},
		&searcher.Config{FaultDelay: 2 * time.Second, FaultStats: true}, &broker.Config{})
	c, ctx := n.Client(), context.Background()
	if _, err := c.CreateIndex(ctx, "slowstats", 2, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "slowstats", ndjson(30, "s"))
	start := time.Now()
	r, err := c.Search(ctx, "slowstats", &api.SearchRequest{Q: "noodles", TimeoutMS: 1000, Profile: true})
	if err != nil || r.Shards.Failed > 0 || r.Total != 10 {
		t.Fatalf("search with slow statistics: %+v %v", r, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the search took %s", took)
	}
	if !slices.ContainsFunc(r.Profile.Stages, func(s api.Stage) bool { return s.Name == "stats" && strings.Contains(s.Detail, "incomplete") }) {
		t.Fatalf("the profile does not say the statistics were incomplete: %+v", r.Profile.Stages)
	}
}

// On an index of one shard, a query seen for the first time is scored
// with the shard's own statistics counted as it searches (no statistics
// round trip), exactly as the statistics phase would; the broker caches
// what the shard counted, so the same query next is a cache hit.
func TestOneShardCountsItsStatistics(t *testing.T) {
	t.Parallel()
	docs := catalogNDJSON(t, 400)
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	loadCatalog(t, n, "one", 1, docs)
	c := n.Client()
	ctx := context.Background()
	single, ref := catalogReference(t, docs)
	// Typo tolerance off: under its default ("auto") the statistics of q
	// as typed are asked of the shard before the plan, to know which
	// words take typos, and the search finds them cached.
	req := api.SearchRequest{Q: "spicy noodles", Size: 20, Profile: true, TimeoutMS: 30000, Typos: new(false)}
	for i, want := range []string{"counted by the index's one shard", "cache hit"} {
		got, err := c.Search(ctx, "one", &req)
		if err != nil {
			t.Fatal(err)
		}
		if detail := statsDetail(got); !strings.HasPrefix(detail, want) {
			t.Fatalf("search %d: statistics stage %q, want %q", i, detail, want)
		}
		if diff := hitsDiffer(got.Hits, refSearch(t, single, ref, req, 20).Hits, 0); diff != "" {
			t.Fatalf("search %d: %s", i, diff)
		}
	}
}

// A query seen for the first time whose terms earlier queries read is
// scored with statistics put together from theirs, with no round trip,
// exactly as one index would score it; one with a term no query read yet
// pays the round trip; updates past the freshness bound make a shard
// refuse the put-together statistics, and the search is exact again.
func TestNewQueryFromCachedTerms(t *testing.T) {
	t.Parallel()
	docs := catalogNDJSON(t, 1500)
	// Whole dictionaries off: they would answer for soup below
	// (TestNewQueryFromDictionaries).
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{StatsMaxUpdates: 5, StatsDictionaryTerms: -1})
	loadCatalog(t, n, "menu", 4, docs)
	c := n.Client()
	ctx := context.Background()
	single, ref := catalogReference(t, docs)
	for i, tc := range []struct{ q, want string }{
		{"spicy noodles", "cache miss"},
		{"chicken curry", "cache miss"},
		{"curry noodles", "put together"},
		{"Chicken SPICY", "put together"}, // the same terms once analysed
		{"noodles soup", "cache miss"},    // soup: no query read it yet
		{"soup chicken", "put together"},
		{"spicy noodles", "cache hit"},
	} {
		req := api.SearchRequest{Q: tc.q, Size: 20, Profile: true, TimeoutMS: 30000}
		got, err := c.Search(ctx, "menu", &req)
		if err != nil {
			t.Fatal(err)
		}
		if detail := statsDetail(got); !strings.HasPrefix(detail, tc.want) {
			t.Fatalf("search %d (%q): statistics stage %q, want %q", i, tc.q, detail, tc.want)
		}
		if diff := hitsDiffer(got.Hits, refSearch(t, single, ref, req, 20).Hits, 0); diff != "" {
			t.Fatalf("search %d (%q): %s", i, tc.q, diff)
		}
	}

	// 300 more documents (another catalogue's, under other ids), about
	// 75 a shard: past the bound of 5. The next new query is put together
	// from statistics that miss them; the shards refuse those, and it is
	// scored exactly.
	var extra bytes.Buffer
	for line := range bytes.Lines(catalogNDJSON(t, 300)) {
		extra.Write(bytes.Replace(line, []byte(`{"id":"r`), []byte(`{"id":"x`), 1))
	}
	if !bytes.HasPrefix(extra.Bytes(), []byte(`{"id":"x`)) {
		t.Fatalf("the catalogue's lines begin otherwise: %.40s", extra.Bytes())
	}
	all := append(slices.Clip(docs), extra.Bytes()...)
	bulk(t, c, "menu", &extra, client.BulkOptions{NoSnapshot: true}) // more documents: waited for below
	waitDocs(t, n, 1800)
	allIdx, allRef := catalogReference(t, all)
	req := api.SearchRequest{Q: "curry spicy", Size: 20, TimeoutMS: 30000}
	got, err := c.Search(ctx, "menu", &req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := hitsDiffer(got.Hits, refSearch(t, allIdx, allRef, req, 20).Hits, 0); diff != "" {
		t.Fatalf("after 300 more documents: %s", diff)
	}
}

// Once the broker has counted the whole dictionary of the field queries
// read (the catalogue's _all), a query seen for the first time is put
// together with no round trip though no earlier query read its words,
// even a word no document holds, and scored exactly; under typo
// tolerance "auto" too, the typos' terms listed from the dictionary; documents past the freshness bound that bring a word the
// dictionary lacked are found, and scored exactly.
func TestNewQueryFromDictionaries(t *testing.T) {
	t.Parallel()
	docs := catalogNDJSON(t, 1500)
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{StatsMaxUpdates: 5})
	loadCatalog(t, n, "menu", 4, docs)
	c := n.Client()
	ctx := context.Background()
	single, ref := catalogReference(t, docs)
	search := func(q string, typos *bool) (*api.SearchResponse, api.SearchRequest) {
		t.Helper()
		req := api.SearchRequest{Q: q, Size: 20, Profile: true, TimeoutMS: 30000, Typos: typos}
		got, err := c.Search(ctx, "menu", &req)
		if err != nil {
			t.Fatal(err)
		}
		return got, req
	}
	// The first query fills the table; the next lists its terms, and the
	// broker counts the dictionary of their field in the background.
	search("spicy noodles", new(false))
	search("chicken curry", new(false))
	testwait.Until(t, 10*time.Second, "the broker keeps _all's dictionary", func() bool {
		return counter(t, n, "quarry_broker_stats_dictionaries_total", map[string]string{"outcome": "kept"}) >= 1
	})
	for i, q := range []string{"vegan soup", "quokka dumplings", "wombat"} {
		got, req := search(q, new(false))
		if detail := statsDetail(got); !strings.HasPrefix(detail, "put together") {
			t.Fatalf("search %d (%q): statistics stage %q, want put together", i, q, detail)
		}
		if diff := hitsDiffer(got.Hits, refSearch(t, single, ref, req, 20).Hits, 0); diff != "" {
			t.Fatalf("search %d (%q): %s", i, q, diff)
		}
	}
	// Typo tolerance's default: the words as typed are put together, and
	// so are the typos' terms, listed from the dictionary: no round trip
	// before the plan nor after it.
	for _, q := range []string{"burger salad", "axolotl ramen", "chiken dumplngs"} {
		got, req := search(q, nil)
		if detail := statsDetail(got); !strings.HasPrefix(detail, "put together") {
			t.Fatalf("%q: statistics stage %q, want put together", q, detail)
		}
		if diff := hitsDiffer(got.Hits, refSearch(t, single, ref, req, 20).Hits, 0); diff != "" {
			t.Fatalf("%q: %s", q, diff)
		}
		if q == "chiken dumplngs" && got.Total == 0 {
			t.Fatalf("%q: no hits: the typos were not taken", q)
		}
	}
	if counter(t, n, "quarry_broker_stats_dictionaries_total", map[string]string{"outcome": "not_kept"}) != 0 {
		t.Fatal("a dictionary was not kept")
	}

	// 300 more documents, each with a word the dictionary lacks (past the
	// bound of 5 updates a shard): the shards refuse statistics put
	// together from the dictionary, and the word is found and scored
	// exactly.
	var extra bytes.Buffer
	for line := range bytes.Lines(catalogNDJSON(t, 300)) {
		line = bytes.Replace(line, []byte(`{"id":"r`), []byte(`{"id":"x`), 1)
		extra.Write(bytes.Replace(line, []byte(`"name":"`), []byte(`"name":"Quokka `), 1))
	}
	if bytes.Count(extra.Bytes(), []byte("Quokka ")) != 300 {
		t.Fatalf("the catalogue's lines are written otherwise: %.80s", extra.Bytes())
	}
	all := append(slices.Clip(docs), extra.Bytes()...)
	bulk(t, c, "menu", &extra, client.BulkOptions{NoSnapshot: true})
	waitDocs(t, n, 1800)
	allIdx, allRef := catalogReference(t, all)
	got, req := search("quokka noodles", new(false))
	if got.Total < 300 {
		t.Fatalf("quokka: %d hits, want the 300 new documents at least", got.Total)
	}
	if diff := hitsDiffer(got.Hits, refSearch(t, allIdx, allRef, req, 20).Hits, 0); diff != "" {
		t.Fatalf("after 300 more documents: %s", diff)
	}
}

// statsDetail is what a profiled response's statistics stage says.
func statsDetail(r *api.SearchResponse) string {
	for _, st := range r.Profile.Stages {
		if st.Name == "stats" {
			return st.Detail
		}
	}
	return ""
}
