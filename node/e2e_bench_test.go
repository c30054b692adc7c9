package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/searcher"
)

// The open-loop sub-benchmarks of BenchmarkEndToEnd offer a fixed load,
// whatever b.N: openLoopRate queries a second for openLoopDuration (1,200
// queries, enough for a p99.9). On a 2-core machine 400/s is about half
// of what quarry-4-shards serves closed-loop (…/parallel) and a quarter of
// what bleve-one-index serves: latency at moderate load, not saturation.
const (
	openLoopRate     = 400
	openLoopDuration = 3 * time.Second
)

// e2eParallelism multiplies GOMAXPROCS for the RunParallel sub-benchmarks:
// that many concurrent callers per CPU keep the NATS round trips of the
// quarry path overlapped.
const e2eParallelism = 4

// e2eShards is the shard count of the sharded setups.
const e2eShards = 4

// e2eFields are the stored fields every benchmark query returns.
var e2eFields = []string{"name", "price"}

// e2eQuarry starts every role in one process and loads docs (catalogue
// NDJSON) into index "menu" with the given shards.
func e2eQuarry(b *testing.B, docs []byte, shards int) *Node {
	b.Helper()
	n := startRoles(b, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	res := loadCatalog(b, n, "menu", shards, docs)
	if res.Snapshot != nil {
		// The bulk load ended with a snapshot: let the searcher swap to
		// it now rather than during the measurements.
		e2eWaitGeneration(b, n, res.Snapshot.Generation)
	}
	return n
}

// e2eWaitGeneration waits until the node's searcher serves generation gen
// (or newer) on every shard. A searcher that refused the generation keeps
// serving the old one, the same documents; that is logged, not fatal.
func e2eWaitGeneration(b *testing.B, n *Node, gen uint64) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	waitUntil(b, 3*time.Minute, fmt.Sprintf("generation %d served, or the deadline", gen), func() bool {
		behind := 0
		for _, st := range n.Searcher.Stats() {
			if st.Generation < gen {
				behind++
			}
		}
		if behind > 0 && time.Now().After(deadline) {
			b.Logf("%d shards still serve a generation before %d", behind, gen)
			return true
		}
		return behind == 0
	})
}

// e2eQuarrySearch is one query through the client, as an application does.
func e2eQuarrySearch(c *client.Client, q string) (*api.SearchResponse, error) {
	resp, err := c.Search(context.Background(), "menu", &api.SearchRequest{Q: q, Fields: e2eFields})
	if err == nil && (resp.Shards.Failed > 0 || len(resp.Hits) == 0) {
		err = fmt.Errorf("search %q: %d hits, shards %+v", q, len(resp.Hits), resp.Shards)
	}
	return resp, err
}

// e2eBleveSearch is one query on a bleve index or alias, built the way the
// planner builds it for Quarry's shards. global asks an alias for bleve's
// global scoring (which does not make its scores one index's: see
// e2eCheckSame).
func e2eBleveSearch(idx bleve.Index, q string, global bool) (*bleve.SearchResult, error) {
	return e2eBleveSearchStats(idx, q, global, nil)
}

// e2eBleveSearchStats is e2eBleveSearch scored with st (nil: bleve's own
// statistics).
func e2eBleveSearchStats(idx bleve.Index, q string, global bool, st *search.BM25Stats) (*bleve.SearchResult, error) {
	bq, err := planner.BuildQuery(&api.SearchRequest{Q: q}, api.QuerySettings{}, nil, nil)
	if err != nil {
		return nil, err
	}
	req := bleve.NewSearchRequestOptions(bq, 10, 0, false)
	req.Fields = e2eFields
	req.SortBy([]string{"-_score", "_id"})
	if st != nil {
		req.PreSearchData = map[string]any{search.BM25PreSearchDataKey: st}
	}
	ctx := context.Background()
	if global {
		ctx = context.WithValue(ctx, search.SearchTypeKey, search.GlobalScoring)
	}
	res, err := idx.SearchInContext(ctx, req)
	if err == nil && len(res.Hits) == 0 {
		err = fmt.Errorf("search %q: no hits", q)
	}
	return res, err
}

// splitByShard splits catalogue NDJSON by each document's shard, as the
// indexer routes it.
func splitByShard(tb testing.TB, docs []byte, shards int) [][]byte {
	tb.Helper()
	out := make([][]byte, shards)
	for line := range bytes.Lines(docs) {
		var doc struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(line, &doc); err != nil || doc.ID == "" {
			tb.Fatalf("document %q: %v", line, err)
		}
		s := subject.ShardOf(doc.ID, shards)
		out[s] = append(out[s], line...)
	}
	return out
}

// settleScorch waits until scorch has persisted and merged every index's
// segments (see shard.Settle), so background merging does not run during
// the measurements.
func settleScorch(tb testing.TB, idxs ...bleve.Index) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	switch state, err := shard.Settle(ctx, 200*time.Millisecond, idxs...); {
	case errors.Is(err, shard.ErrNoSegmentStats):
		tb.Logf("scorch stats unavailable; not waiting for merges")
	case err != nil:
		tb.Logf("scorch still merging after 60s (file segments per index: %s)", state)
	}
}

// e2eLatency runs f once per iteration on the benchmark queries in turn
// and reports latency percentiles and allocations.
func e2eLatency(b *testing.B, f func(q string) error) {
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q := benchQueries[i%len(benchQueries)]
		start := time.Now()
		if err := f(q); err != nil {
			b.Fatal(err)
		}
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(start))
		}
		i++
	}
	reportPercentiles(b, lat)
}

// e2eThroughput runs f from GOMAXPROCS*e2eParallelism goroutines and
// reports queries/s (the reciprocal of ns/op).
func e2eThroughput(b *testing.B, f func(q string) error) {
	b.ReportAllocs()
	b.SetParallelism(e2eParallelism)
	var worker atomic.Int64
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := int(worker.Add(1)) // workers start on different queries
		for pb.Next() {
			if err := f(benchQueries[i%len(benchQueries)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "queries/s")
}

// openLoop offers f at a fixed rate for dur, one goroutine per request,
// and returns each request's latency. Request i is due at start+(i+1)/rate
// (a ticker wakes the sender); its latency counts from that due time, not
// from when it actually started, so a stalled sender or a slow system
// shows up as latency instead of as fewer requests (no coordinated
// omission). The ticker's own lateness is therefore included too: Go's
// timers wake about a millisecond late at worst, so a no-op f measures
// about 0.6ms at p50 and 1.2ms at p99 (2-core VM) — the harness's floor.
func openLoop(b *testing.B, rate int, dur time.Duration, f func()) []time.Duration {
	b.Helper()
	interval := time.Second / time.Duration(rate)
	total := int(dur / interval)
	lat := make([]time.Duration, total)
	var wg sync.WaitGroup
	start := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; i < total; {
		<-tick.C
		now := time.Now()
		// Send everything due by now: a late tick (or a dropped one)
		// sends the backlog at once.
		for ; i < total; i++ {
			due := start.Add(time.Duration(i+1) * interval)
			if due.After(now) {
				break
			}
			k := i
			wg.Go(func() {
				f()
				lat[k] = time.Since(due)
			})
		}
	}
	wg.Wait()
	return lat
}

// openLoopResult is one open-loop measurement: latencies, and heap
// allocations per query (of the whole process, roles included).
type openLoopResult struct {
	lat           []time.Duration
	allocs, bytes float64
}

// e2eOpenLoop reports an open-loop run of f at openLoopRate. b.N is
// ignored: the run is made once and kept in *res, since with -benchtime=Nx
// the testing package calls the function twice (N=1, then N).
func e2eOpenLoop(b *testing.B, res **openLoopResult, f func(q string) error) {
	if *res == nil {
		var next atomic.Int64
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		lat := openLoop(b, openLoopRate, openLoopDuration, func() {
			q := benchQueries[int(next.Add(1))%len(benchQueries)]
			if err := f(q); err != nil {
				b.Error(err)
			}
		})
		runtime.ReadMemStats(&after)
		n := float64(len(lat))
		*res = &openLoopResult{lat: lat,
			allocs: float64(after.Mallocs-before.Mallocs) / n,
			bytes:  float64(after.TotalAlloc-before.TotalAlloc) / n}
	}
	r := *res
	b.ReportAllocs()
	b.ReportMetric(0, "ns/op") // a whole run per op: meaningless
	b.ReportMetric(r.allocs, "allocs/op")
	b.ReportMetric(r.bytes, "B/op")
	reportPercentiles(b, slices.Clone(r.lat))
}

// e2eCheckSame checks that Quarry ranks as one index scored with Quarry's
// statistics does (shard.IndexStats: same totals, ids and, within
// rounding, scores for every benchmark query) and logs how far the alias
// is from it: bleve's global scoring shares the document count and field
// cardinalities between the alias's indexes, not the terms' document
// frequencies, and bleve's field cardinality is not Quarry's token total.
// It returns the share of the alias's top-10 positions holding another
// document than one index's, in percent.
func e2eCheckSame(b *testing.B, one, alias bleve.Index, c *client.Client) (aliasDiffPct float64) {
	b.Helper()
	ids, scores, hits := 0, 0, 0
	st, err := shard.IndexStats(one)
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range benchQueries {
		want, err := e2eBleveSearchStats(one, q, false, st)
		if err != nil {
			b.Fatal(err)
		}
		a, err := e2eBleveSearch(alias, q, true)
		if err != nil {
			b.Fatal(err)
		}
		got, err := e2eQuarrySearch(c, q)
		if err != nil {
			b.Fatal(err)
		}
		if a.Total != want.Total || got.Total != want.Total {
			b.Errorf("%q: total %d one index, %d alias, %d quarry", q, want.Total, a.Total, got.Total)
		}
		if len(a.Hits) != len(want.Hits) || len(got.Hits) != len(want.Hits) {
			b.Fatalf("%q: %d hits one index, %d alias, %d quarry", q, len(want.Hits), len(a.Hits), len(got.Hits))
		}
		for i, w := range want.Hits {
			if got.Hits[i].ID != w.ID || !corpus.SameScore(got.Hits[i].Score, w.Score) {
				b.Errorf("%q hit %d: quarry %s %.12f, one index %s %.12f", q, i, got.Hits[i].ID, got.Hits[i].Score, w.ID, w.Score)
			}
			hits++
			if a.Hits[i].ID != w.ID {
				ids++
			}
			if !corpus.SameScore(a.Hits[i].Score, w.Score) {
				scores++
			}
		}
	}
	b.Logf("quarry-4-shards ranks as bleve-one-index; bleve-alias-4-shards differs in %d of %d hit ids and %d scores", ids, hits, scores)
	return 100 * float64(ids) / float64(hits)
}

// BenchmarkEndToEnd compares, on the same catalogue documents and queries
// (top 10, fields name and price):
//
//   - bleve-one-index: one scorch index searched in-process;
//   - bleve-alias-4-shards: the documents split by shard into four scorch
//     indexes behind a bleve alias, with global scoring;
//   - quarry-4-shards: a 4-shard Quarry index, every role in this process,
//     through the client (JSON over NATS to the broker, fan-out over NATS).
//
// Each is measured one query at a time (latency), under parallel load
// (…/parallel: queries/s) and, for bleve-one-index and quarry, at a fixed
// offered load (…/open-400qps: latency without coordinated omission).
// The indexes are built once; the check before the runs fails the
// benchmark if Quarry does not rank as one index does, and measures how
// far the alias is from it (rank-diff-%, see e2eCheckSame).
func BenchmarkEndToEnd(b *testing.B) {
	docs := catalogNDJSON(b, catalog.DefaultSize)
	n := e2eQuarry(b, docs, e2eShards)
	c := n.Client()

	one := bleveDirect(b, b.TempDir()+"/one", docs)
	b.Cleanup(func() { one.Close() })
	parts := splitByShard(b, docs, e2eShards)
	shards := make([]bleve.Index, e2eShards)
	for i, part := range parts {
		shards[i] = bleveDirect(b, fmt.Sprintf("%s/shard%d", b.TempDir(), i), part)
		b.Cleanup(func() { shards[i].Close() })
	}
	alias := bleve.NewIndexAlias(shards...)
	// Without the mapping the alias ignores search.GlobalScoring (it reads
	// the scoring model from its own mapping) and scores per index.
	m, err := indexmap.Build(catalog.Mapping())
	if err != nil {
		b.Fatal(err)
	}
	if err := alias.SetIndexMapping(m); err != nil {
		b.Fatal(err)
	}
	settleScorch(b, append([]bleve.Index{one}, shards...)...)
	aliasDiff := e2eCheckSame(b, one, alias, c)
	if b.Failed() {
		return
	}

	targets := []struct {
		name string
		f    func(q string) error
		open bool
	}{
		{"bleve-one-index", func(q string) error {
			_, err := e2eBleveSearch(one, q, false)
			return err
		}, true},
		{"bleve-alias-4-shards", func(q string) error {
			_, err := e2eBleveSearch(alias, q, true)
			return err
		}, false},
		{"quarry-4-shards", func(q string) error {
			_, err := e2eQuarrySearch(c, q)
			return err
		}, true},
	}
	for range 5 { // warm up
		for _, t := range targets {
			for _, q := range benchQueries {
				if err := t.f(q); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, t := range targets {
		b.Run(t.name, func(b *testing.B) {
			e2eLatency(b, t.f)
			if t.name == "bleve-alias-4-shards" {
				// Not a latency: how unlike one index the alias ranks.
				b.ReportMetric(aliasDiff, "rank-diff-%")
			}
		})
	}
	for _, t := range targets {
		b.Run(t.name+"/parallel", func(b *testing.B) { e2eThroughput(b, t.f) })
	}
	for _, t := range targets {
		if t.open {
			var res *openLoopResult
			b.Run(t.name+"/open-"+strconv.Itoa(openLoopRate)+"qps", func(b *testing.B) { e2eOpenLoop(b, &res, t.f) })
		}
	}
}

// brokerOverhead is a profiled response's took_ms less its slowest
// shard's own search time (the "search X.XXXms, queue …" of the shard
// stages): planning, statistics, encoding, NATS transport and queueing to
// the shards, merging. statsHit reports a statistics cache hit.
func brokerOverhead(resp *api.SearchResponse) (overhead, own time.Duration, statsHit bool, err error) {
	if resp.Profile == nil {
		return 0, 0, false, fmt.Errorf("no profile in the response")
	}
	slowest, slowestQueued, shards := 0.0, 0.0, 0
	for _, st := range resp.Profile.Stages {
		if st.Name == "stats" && st.Detail == "cache hit" {
			statsHit = true
		}
		if !strings.HasPrefix(st.Name, "shard ") {
			continue
		}
		rest, ok := strings.CutPrefix(st.Detail, "search ")
		num, _, ok2 := strings.Cut(rest, "ms,")
		ms, perr := strconv.ParseFloat(num, 64)
		if !ok || !ok2 || perr != nil {
			return 0, 0, false, fmt.Errorf("stage %q: unexpected detail %q", st.Name, st.Detail)
		}
		queue := 0.0
		if q, ok := strings.CutPrefix(strings.SplitN(st.Detail, ", ", 3)[1], "queue "); ok {
			queue, _ = strconv.ParseFloat(strings.TrimSuffix(q, "ms"), 64)
		}
		slowest = max(slowest, ms)
		slowestQueued = max(slowestQueued, ms+queue)
		shards++
	}
	if shards == 0 {
		return 0, 0, false, fmt.Errorf("no shard stage in the profile")
	}
	return time.Duration(math.Round((resp.TookMS - slowest) * 1e6)), time.Duration(math.Round((resp.TookMS - slowestQueued) * 1e6)), statsHit, nil
}

// BenchmarkBrokerOverhead measures what the broker adds to the slowest
// shard's search, on 1 and on 4 shards: overhead-p50/p99-µs are the broker's
// took_ms less that shard's search time (see brokerOverhead); p50/p99-µs
// are end to end at the client (adding the client→broker NATS hop and the
// JSON request and response); took-p50-µs is the broker's own took_ms.
// Requests ask for a profile, which costs a little formatting.
// stats-cache-hit-% is the share of requests whose term statistics came
// from the broker's cache: after the warm-up, all of them unless the
// cache was invalidated. own-p50/p99-µs also leave out the time requests
// waited for a searcher worker: with 4 shards on 2 cores, the shards'
// searches queue behind each other, which is CPU contention, not broker
// work.
func BenchmarkBrokerOverhead(b *testing.B) {
	docs := catalogNDJSON(b, catalog.DefaultSize)
	for _, shards := range []int{1, e2eShards} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) { brokerOverheadBench(b, docs, shards) })
	}
}

func brokerOverheadBench(b *testing.B, docs []byte, shards int) {
	n := e2eQuarry(b, docs, shards)
	c := n.Client()
	ctx := context.Background()
	const keep = 1 << 16
	e2e := make([]time.Duration, 0, keep)
	over := make([]time.Duration, 0, keep)
	own := make([]time.Duration, 0, keep)
	took := make([]time.Duration, 0, keep)
	// Measure the steady state: statistics cached, searchers warm.
	for range 3 {
		for _, q := range benchQueries {
			if _, err := c.Search(ctx, "menu", &api.SearchRequest{Q: q, Profile: true, Fields: e2eFields}); err != nil {
				b.Fatal(err)
			}
		}
	}
	hits, requests := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		q := benchQueries[requests%len(benchQueries)]
		start := time.Now()
		resp, err := c.Search(ctx, "menu", &api.SearchRequest{Q: q, Profile: true, Fields: e2eFields})
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		o, ow, hit, err := brokerOverhead(resp)
		if err != nil {
			b.Fatal(err)
		}
		if hit {
			hits++
		}
		requests++
		if len(e2e) < keep {
			e2e = append(e2e, d)
			over = append(over, o)
			own = append(own, ow)
			took = append(took, time.Duration(math.Round(resp.TookMS*1e6)))
		}
	}
	pct := func(lat []time.Duration, q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	slices.Sort(over)
	slices.Sort(own)
	slices.Sort(took)
	b.ReportMetric(pct(own, 0.50), "own-p50-µs")
	b.ReportMetric(pct(own, 0.99), "own-p99-µs")
	b.ReportMetric(pct(over, 0.50), "overhead-p50-µs")
	b.ReportMetric(pct(over, 0.99), "overhead-p99-µs")
	b.ReportMetric(pct(took, 0.50), "took-p50-µs")
	b.ReportMetric(100*float64(hits)/float64(requests), "stats-cache-hit-%")
	reportPercentiles(b, e2e)
}
