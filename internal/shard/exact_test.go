package shard

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/querystats"
	"github.com/quarrysearch/quarry/internal/testtier"
	"github.com/quarrysearch/quarry/internal/wire"
)

// postingsStats is the reference's statistics (corpus.PostingsStats).
func postingsStats(tb testing.TB, idx bleve.Index, fields ...string) *search.BM25Stats {
	tb.Helper()
	st, err := corpus.PostingsStats(idx, fields...)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// refHit is one hit of a reference or sharded search.
type refHit struct {
	ID    string
	Score float64
}

// referenceSearch runs q on the one index holding every document, scored
// with st (nil: bleve's own statistics), top k by score then id.
func referenceSearch(tb testing.TB, idx bleve.Index, st *search.BM25Stats, q query.Query, k int) ([]refHit, uint64) {
	tb.Helper()
	r := bleve.NewSearchRequestOptions(q, k, 0, false)
	r.SortBy([]string{"-_score", "_id"})
	if st != nil {
		r.PreSearchData = map[string]any{search.BM25PreSearchDataKey: st}
	}
	res, err := idx.Search(r)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]refHit, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = refHit{h.ID, h.Score}
	}
	return out, res.Total
}

// shardedSearch runs req as the broker does: the statistics phase on every
// replica, summed, then the search with them, merged by score then id.
func shardedSearch(tb testing.TB, reps []*Replica, req wire.ShardRequest) ([]refHit, uint64) {
	tb.Helper()
	ctx := context.Background()
	gs := &GlobalStats{}
	sreq := req
	sreq.Phase = wire.PhaseStats
	for _, r := range reps {
		st, err := r.Stats(ctx, &sreq)
		if err != nil {
			tb.Fatal(err)
		}
		// Through JSON, as on the wire.
		b, _ := json.Marshal(st)
		var back GlobalStats
		if err := json.Unmarshal(b, &back); err != nil {
			tb.Fatal(err)
		}
		gs.Add(&back)
	}
	req.Stats = gs
	var all []refHit
	var total uint64
	for _, r := range reps {
		resp, err := r.Search(ctx, &req)
		if err != nil {
			tb.Fatal(err)
		}
		total += resp.Total
		for _, h := range resp.Hits {
			all = append(all, refHit{h.ID, h.Score})
		}
	}
	slices.SortFunc(all, func(a, b refHit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return all[:min(len(all), req.K)], total
}

// sameHits reports where got differs from want: the same ids in the same
// order with scores within a relative 1e-9. Hits whose scores are within
// that of each other are a tie (floating-point sums in another order may
// differ in the last bit) and may come in any order; a tie the page cuts
// may be cut at other members (want holds more hits than got).
func sameHits(got, want []refHit) string {
	for i := 0; i < len(got); {
		if i >= len(want) {
			return fmt.Sprintf("hit %d: %s %.12f, the reference has %d hits", i, got[i].ID, got[i].Score, len(want))
		}
		j := i + 1
		for j < len(want) && corpus.SameScore(want[j].Score, want[i].Score) {
			j++
		}
		group := want[i:j]
		for k := i; k < min(j, len(got)); k++ {
			if !slices.ContainsFunc(group, func(h refHit) bool { return h.ID == got[k].ID }) || !corpus.SameScore(got[k].Score, want[i].Score) {
				return fmt.Sprintf("hit %d: %s %.12f, the reference %s %.12f", k, got[k].ID, got[k].Score, want[k].ID, want[k].Score)
			}
		}
		i = j
	}
	return ""
}

// exactQueries are the query kinds exact scoring covers, from the corpus's
// own words.
func exactQueries(tb testing.TB, g *corpus.Generator, docs []map[string]any) map[string]string {
	tb.Helper()
	w := g.Words()
	long := func(from, n int) string { // a word of n letters or more
		for _, x := range w[from:] {
			if len(x) >= n && !strings.ContainsAny(x, "0123456789") {
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
	phrase := strings.Fields(docs[17]["body"].(string))[3:5]
	qs := map[string]string{
		"match":          fmt.Sprintf(`{"match":"%s %s","field":"body"}`, w[3], w[120]),
		"term":           fmt.Sprintf(`{"term":%q,"field":"title"}`, w[10]),
		"phrase":         fmt.Sprintf(`{"match_phrase":%q,"field":"body"}`, strings.Join(phrase, " ")),
		"boolean":        fmt.Sprintf(`{"must":{"conjuncts":[{"match":%q,"field":"title"}]},"should":{"disjuncts":[{"match":%q,"field":"body"},{"match":%q,"field":"body"}]},"must_not":{"disjuncts":[{"term":%q,"field":"body"}]}}`, w[5], w[30], w[300], w[2]),
		"filtered":       fmt.Sprintf(`{"must":{"conjuncts":[{"match":"%s %s","field":"body"}]},"filter":{"min":1950,"max":2000,"field":"year"}}`, w[7], w[77]),
		"fuzzy":          fmt.Sprintf(`{"term":%q,"fuzziness":2,"field":"body"}`, typo(long(200, 7))),
		"match fuzzy":    fmt.Sprintf(`{"match":"%s %s","fuzziness":1,"field":"title"}`, typo(long(50, 6)), w[40]),
		"prefix":         fmt.Sprintf(`{"prefix":%q,"field":"body"}`, long(300, 6)[:3]),
		"wildcard":       fmt.Sprintf(`{"wildcard":"%s*%s","field":"title"}`, w[40][:2], w[40][len(w[40])-1:]),
		"regexp":         fmt.Sprintf(`{"regexp":"%s[a-z]{2,5}","field":"body"}`, w[60][:2]),
		"term range":     fmt.Sprintf(`{"disjuncts":[{"match":%q,"field":"body"},{"min":%q,"max":%q,"field":"title"}]}`, w[9], w[90][:2], w[90]),
		"query string":   fmt.Sprintf(`{"query":"+title:%s %s %s~1 body:%s*"}`, w[4], w[60], typo(long(30, 6)), long(500, 5)[:3]),
		"numeric scored": fmt.Sprintf(`{"disjuncts":[{"match":%q,"field":"body"},{"min":1950,"max":1960,"field":"year"}]}`, w[20]),
		"date scored":    fmt.Sprintf(`{"disjuncts":[{"match":%q,"field":"body"},{"start":"1990-01-01T00:00:00Z","end":"1995-06-01T00:00:00Z","field":"date"}]}`, w[21]),
		"geo scored":     fmt.Sprintf(`{"disjuncts":[{"match":%q,"field":"body"},{"location":{"lat":10,"lon":20},"distance":"700km","field":"loc"}]}`, w[22]),
		"geo box":        fmt.Sprintf(`{"disjuncts":[{"match":%q,"field":"title"},{"top_left":{"lat":30,"lon":-10},"bottom_right":{"lat":20,"lon":5},"field":"loc"}]}`, w[23]),
	}
	return qs
}

// loadReplicas makes n local replicas (no stream) and the reference index,
// and indexes docs into them, shard by position, in batches of 100 so that
// the replicas hold several segments.
func loadReplicas(tb testing.TB, n int, raw json.RawMessage, docs []map[string]any) []*Replica {
	tb.Helper()
	m, err := indexmap.Build(raw)
	if err != nil {
		tb.Fatal(err)
	}
	reps := make([]*Replica, n)
	for i := range reps {
		r, err := OpenLocal(Config{Index: "t", Shard: i, Mapping: m, Dir: fmt.Sprintf("%s/s%d", tb.TempDir(), i)})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { r.Close() })
		reps[i] = r
	}
	indexDocs(tb, reps, docs)
	return reps
}

// indexDocs indexes (or replaces) docs, each in replica hash(id) % n, in
// batches of 100.
func indexDocs(tb testing.TB, reps []*Replica, docs []map[string]any) {
	tb.Helper()
	batches := make([]*bleve.Batch, len(reps))
	flush := func(i int) {
		if err := reps[i].idx.Batch(batches[i]); err != nil {
			tb.Fatal(err)
		}
		batches[i] = reps[i].idx.NewBatch()
	}
	for i := range reps {
		batches[i] = reps[i].idx.NewBatch()
	}
	for _, d := range docs {
		id := d["id"].(string)
		i := shardOf(id, len(reps))
		if err := batches[i].Index(id, d); err != nil {
			tb.Fatal(err)
		}
		if batches[i].Size() == 100 {
			flush(i)
		}
	}
	for i := range reps {
		flush(i)
	}
}

func shardOf(id string, n int) int {
	var h uint32 = 2166136261
	for i := range len(id) {
		h = (h ^ uint32(id[i])) * 16777619
	}
	return int(h % uint32(n))
}

func deleteDocs(tb testing.TB, reps []*Replica, ids []string) {
	tb.Helper()
	for _, id := range ids {
		r := reps[shardOf(id, len(reps))]
		if err := r.idx.Delete(id); err != nil {
			tb.Fatal(err)
		}
	}
}

// referenceIndex is corpus.ReferenceIndex, closed when tb ends.
func referenceIndex(tb testing.TB, raw json.RawMessage, docs []map[string]any) bleve.Index {
	tb.Helper()
	_, idx, err := corpus.ReferenceIndex(tb.TempDir()+"/ref", raw, docs)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { idx.Close() })
	return idx
}

// A query over several replicas (1, 2, 4 and 7), each scored with the summed
// statistics, returns the same ids, order and scores as one bleve index of
// every document scored with token totals counted from its postings: for
// every query kind, after updates and deletes, and after forced merges.
// bleve's own statistics on the same index give other scores (so the test
// guards something).
func TestExactScoringShards(t *testing.T) {
	g := corpus.New(corpus.Config{Seed: 11, BodyMax: 90})
	// The fast tier: 300 documents over 1 and 3 replicas; the long tier
	// (testtier.Long): 800 over 1, 2, 4 and 7.
	size, counts := 300, []int{1, 3}
	if testtier.Long {
		size, counts = 800, []int{1, 2, 4, 7}
	}
	docs := g.Records(size)
	queries := exactQueries(t, g, docs)
	// Updates (new text for existing ids) and deletes, applied after the
	// first load: the replicas hold their old versions as deleted
	// documents until merged.
	final := slices.Clone(docs)
	var updates []map[string]any
	for i := 0; i < len(final); i += 13 {
		d := g.Next().Record()
		d["id"] = final[i]["id"]
		final[i] = d
		updates = append(updates, d)
	}
	var deleted []string
	final = slices.DeleteFunc(final, func(d map[string]any) bool {
		if n, _ := fmt.Sscanf(d["id"].(string), "doc-%d", new(int)); n == 1 && len(deleted) < 60 && strings.HasSuffix(d["id"].(string), "7") {
			deleted = append(deleted, d["id"].(string))
			return true
		}
		return false
	})
	raw := corpus.Mapping("bm25")
	ref := referenceIndex(t, raw, final)
	refStats := postingsStats(t, ref, "title", "body", "_all", "year", "date", "loc")
	differs := map[string]bool{}
	for _, n := range counts {
		reps := loadReplicas(t, n, raw, docs)
		indexDocs(t, reps, updates)
		deleteDocs(t, reps, deleted)
		for _, state := range []string{"updated", "merged"} {
			if state == "merged" {
				for _, r := range reps {
					if err := r.ForceMerge(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			for name, qj := range queries {
				t.Run(fmt.Sprintf("%d shards/%s/%s", n, state, name), func(t *testing.T) {
					q, err := query.ParseQuery(json.RawMessage(qj))
					if err != nil {
						t.Fatal(err)
					}
					want, wantTotal := referenceSearch(t, ref, refStats, q, 40)
					if len(want) == 0 {
						t.Fatalf("%s matches nothing", qj)
					}
					got, total := shardedSearch(t, reps, wire.ShardRequest{Query: json.RawMessage(qj), K: 20})
					if total != wantTotal {
						t.Errorf("total %d, reference %d", total, wantTotal)
					}
					if diff := sameHits(got, want); diff != "" || len(got) != min(20, len(want)) {
						t.Fatalf("%s: %s (%d hits, reference %d)", qj, diff, len(got), len(want))
					}
					if n == counts[0] && state == "updated" { // once: the reference alone
						bleveOwn, _ := referenceSearch(t, ref, nil, q, 40)
						differs[name] = sameHits(bleveOwn[:min(20, len(bleveOwn))], want) != ""
					}
				})
			}
		}
	}
	n := 0
	for _, d := range differs {
		if d {
			n++
		}
	}
	if n < len(queries)/2 {
		t.Errorf("bleve's own statistics differ from the reference on only %d of %d queries: %v", n, len(queries), differs)
	}
	t.Logf("bleve's own statistics differ from the reference on %d of %d queries", n, len(queries))
}

// A TF-IDF mapping scores with the index's document count and document
// frequencies too.
func TestExactScoringTFIDF(t *testing.T) {
	g := corpus.New(corpus.Config{Seed: 5, BodyMax: 60})
	docs := g.Records(600)
	raw := corpus.Mapping("tf-idf")
	ref := referenceIndex(t, raw, docs)
	reps := loadReplicas(t, 3, raw, docs)
	w := g.Words()
	for _, qj := range []string{
		fmt.Sprintf(`{"match":"%s %s","field":"body"}`, w[3], w[50]),
		fmt.Sprintf(`{"prefix":%q,"field":"body"}`, w[80][:2]),
		fmt.Sprintf(`{"query":"%s title:%s"}`, w[6], w[12]),
	} {
		q, err := query.ParseQuery(json.RawMessage(qj))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := referenceSearch(t, ref, nil, q, 40)
		got, _ := shardedSearch(t, reps, wire.ShardRequest{Query: json.RawMessage(qj), K: 20})
		if diff := sameHits(got, want); diff != "" || len(got) == 0 {
			t.Errorf("%s: %s", qj, diff)
		}
	}
}

// The token totals a shard reports are the reference's count from the
// postings, through updates, deletes and merges, and cached per segment.
func TestTokenTotals(t *testing.T) {
	g := corpus.New(corpus.Config{Seed: 3, BodyMax: 90})
	size := 300 // the long tier: 700
	if testtier.Long {
		size = 700
	}
	docs := g.Records(size)
	reps := loadReplicas(t, 1, corpus.Mapping("bm25"), docs)
	r := reps[0]
	check := func(state string) {
		t.Helper()
		fields := []string{"title", "body", "_all", "year", "tag"}
		want := postingsStats(t, r.idx, fields...)
		adv, _ := r.idx.Advanced()
		reader, err := adv.Reader()
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		for _, f := range fields {
			n, err := reader.(*querystats.Reader).FieldCardinality(f)
			if err != nil {
				t.Fatal(err)
			}
			if n != want.FieldCardinality[f] || n == 0 {
				t.Errorf("%s: field %s: %d tokens, the postings hold %d", state, f, n, want.FieldCardinality[f])
			}
		}
	}
	check("loaded")
	var upd []map[string]any
	for i := 0; i < size; i += 7 {
		d := g.Next().Record()
		d["id"] = docs[i]["id"]
		upd = append(upd, d)
	}
	indexDocs(t, reps, upd)
	deleteDocs(t, reps, []string{"doc-000003", "doc-000500", "doc-000650", "doc-000651"})
	check("updated")
	if err := r.ForceMerge(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The fields queries read are counted in the new segments before any
	// query asks (what the background loop and a generation swap do).
	if got := r.TokenFields(); len(got) != 5 {
		t.Errorf("fields to warm: %v", got)
	}
	if err := r.Warm(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	si, _ := r.idx.Advanced()
	reader, err := si.Reader()
	if err != nil {
		t.Fatal(err)
	}
	for _, ss := range reader.(*querystats.Reader).IndexReader.(*scorch.IndexSnapshot).Segments() {
		st := si.(*statsIndex).tokens.segment(ss.Id())
		st.mu.Lock()
		if st.fields["body"] == nil {
			t.Errorf("segment %d: body not counted by Warm", ss.Id())
		}
		st.mu.Unlock()
	}
	reader.Close()
	check("merged")
	if n := len(si.(*statsIndex).tokens.segs); n > 40 {
		t.Errorf("the token cache holds %d segments", n)
	}
}

func TestUpdateLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		base  uint64
		add   []uint64
		since uint64
		n     int
		known bool
	}{
		{"nothing applied", 10, nil, 10, 0, true},
		{"before the base", 10, []uint64{12}, 9, 1, false},
		{"all after", 10, []uint64{11, 15, 20}, 10, 3, true},
		{"some after", 10, []uint64{11, 15, 20}, 15, 1, true},
		{"none after", 10, []uint64{11, 15, 20}, 20, 0, true},
		{"between", 10, []uint64{11, 15, 20}, 13, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l updateLog
			l.init(tc.base)
			l.add(tc.add)
			if n, known := l.since(tc.since); n != tc.n || known != tc.known {
				t.Fatalf("since(%d) = %d, %v; want %d, %v", tc.since, n, known, tc.n, tc.known)
			}
		})
	}
	t.Run("ring", func(t *testing.T) {
		var l updateLog
		l.init(0)
		for s := uint64(1); s <= maxTrackedUpdates+100; s++ {
			l.add([]uint64{s})
		}
		if n, known := l.since(maxTrackedUpdates); n != 100 || !known {
			t.Fatalf("since(%d) = %d, %v", maxTrackedUpdates, n, known)
		}
		if n, known := l.since(50); known || n != maxTrackedUpdates {
			t.Fatalf("since(50) = %d, %v: the ring forgot those", n, known)
		}
	})
}

// A search whose statistics miss more of the replica's updates than allowed
// is refused as stale.
func TestStaleStatistics(t *testing.T) {
	r := &Replica{cfg: Config{Shard: 2}}
	r.updates.init(100)
	r.updates.add([]uint64{101, 102, 103})
	for _, tc := range []struct {
		seqs  map[int]uint64
		max   int
		stale bool
	}{
		{map[int]uint64{2: 100}, 3, false},
		{map[int]uint64{2: 100}, 2, true},
		{map[int]uint64{2: 101}, 2, false},
		{map[int]uint64{2: 99}, 1000, true}, // before the replica's history
		{map[int]uint64{1: 5}, 1, false},    // no sequence for this shard
		{map[int]uint64{2: 100}, 0, false},  // no bound
	} {
		err := r.checkFresh(&wire.ShardRequest{Stats: &GlobalStats{Seqs: tc.seqs}, MaxStaleUpdates: tc.max})
		if stale := api.CodeOf(err) == wire.CodeStaleStats; stale != tc.stale || (err != nil && !stale) {
			t.Errorf("%v max %d: %v", tc.seqs, tc.max, err)
		}
	}
}

// IndexStats of a plain scorch index is the count from its postings.
func TestIndexStats(t *testing.T) {
	g := corpus.New(corpus.Config{Seed: 9, BodyMax: 60})
	docs := g.Records(300)
	ref := referenceIndex(t, corpus.Mapping("bm25"), docs)
	got, err := IndexStats(ref, "title", "body", "_all")
	if err != nil {
		t.Fatal(err)
	}
	want := postingsStats(t, ref, "title", "body", "_all")
	if got.DocCount != want.DocCount || !maps.Equal(got.FieldCardinality, want.FieldCardinality) {
		t.Fatalf("IndexStats %+v, the postings %+v", got, want)
	}
}

// Terms that are not UTF-8 are scored with the index's statistics too:
// bleve's to_lower turns words with İ or ẞ into such terms, which JSON
// cannot carry as keys (GlobalStats' JSON sends them base64-encoded).
// Before, a shard scored them with its own document frequency.
func TestExactScoringNonUTF8Terms(t *testing.T) {
	g := corpus.New(corpus.Config{Seed: 5, BodyMax: 40})
	var docs []map[string]any
	for i := range 300 {
		d := g.Next().Record()
		switch {
		case i%3 == 0:
			d["body"] = fmt.Sprint(d["body"], " İSTANBUL İzmir")
		case i%7 == 0:
			d["body"] = fmt.Sprint(d["body"], " GROẞE STRAẞE İstanbul")
		}
		docs = append(docs, d)
	}
	raw := corpus.Mapping("bm25")
	ref := referenceIndex(t, raw, docs)
	refStats := postingsStats(t, ref, "title", "body", "_all")
	reps := loadReplicas(t, 3, raw, docs)
	for _, qj := range []string{`{"match":"İstanbul","field":"body"}`, `{"match":"straße İzmir","field":"body"}`, `{"match":"İSTANBUL GROẞE"}`} {
		q, err := query.ParseQuery(json.RawMessage(qj))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := referenceSearch(t, ref, refStats, q, 40)
		if len(want) == 0 {
			t.Fatalf("%s matches nothing", qj)
		}
		got, _ := shardedSearch(t, reps, wire.ShardRequest{Query: json.RawMessage(qj), K: 20})
		if diff := sameHits(got, want); diff != "" {
			t.Errorf("%s: %s", qj, diff)
		}
	}
}
