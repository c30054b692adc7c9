//go:build long

package node

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/testtier"
)

// heavyOnly has TestHeavyQueryIsolation's heavy team send one of
// heavyRequests, by its index, instead of all of them in turn: which of
// them hurts the calm team most (docs/performance.md, "Buffers that are
// reused, and which heavy request hurts").
var heavyOnly = flag.Int("quarry.heavy-only", -1, "TestHeavyQueryIsolation: the heavy team sends only heavyRequests[N] (-1: all in turn)")

// One team sending the heaviest requests it can (within the limits and
// over them) beside another team's normal queries on another index: the
// calm team sees no failure, and its p99 is compared with its p99 alone.
// The short variant (CI, where other packages' tests share the two cores
// and make a p99 of 200 queries noise) holds the calm team to no failures
// and its median to 3x, and logs the p99s; -quarry.long runs more queries,
// alone and beside in five alternating rounds, and holds the p99 to the
// goal of 2x. The figures are in docs/performance.md.
func TestHeavyQueryIsolation(t *testing.T) {
	n := startNode(t)
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "title", Boost: 2}, {Field: "body"}}}
	docs, queries := 500, 200
	if testtier.Soak {
		// 10,000 queries (about 10 s): the p99 is the 100th slowest, not
		// the 20th, and the heavy team runs through some 50 of its
		// requests, not 10 (with 2,000, runs of one binary ranged from
		// 1.04x to 2.47x, their p99 alone from 1.9 to 6.1 ms; with
		// 10,000, 2.05x to 2.21x, alone 1.8 to 2.2 ms).
		docs, queries = 3000, 10000
	}
	g := corpusIndex(t, n, "heavy", 2, docs, qs)
	corpusIndex(t, n, "calm", 2, docs, qs) // another team: index-calm
	words := g.Words()
	base := "http://" + n.HTTPAddr + "/v1/indexes/"
	normal := func(i int) string {
		return fmt.Sprintf(`{"q":"%s %s","size":10,"fields":["title"]}`, words[(i*7)%300], words[(i*13+5)%300])
	}
	latencies(base+"calm/search", 1, 50, normal, nil) // warm up
	heavy := heavyRequests(words)
	if *heavyOnly >= len(heavy) {
		t.Fatalf("-quarry.heavy-only %d: there are %d heavy requests", *heavyOnly, len(heavy))
	}
	if *heavyOnly >= 0 {
		heavy = heavy[*heavyOnly : *heavyOnly+1]
	}
	// The calm team's queries alone and beside the heavy team alternate
	// in rounds, so that both see the machine as it is at the time: on a
	// shared machine the p99 alone of runs of one binary, measured once
	// before the heavy team, ranged from 1.8 to 2.7 ms.
	rounds := 1
	if testtier.Soak {
		rounds = 5
	}
	per := queries / rounds
	var alone, during []time.Duration
	var heavyCount atomic.Int64
	var baseline int64
	var peak int64
	for r := range rounds {
		if r > 0 {
			runtime.GC() // the heavy team's garbage collected
		}
		calm := func(i int) string { return normal(r*per + i) }
		a, failed := latencies(base+"calm/search", 1, per, calm, nil)
		if len(failed) > 0 {
			t.Fatalf("alone: %d failures: %v", len(failed), failed[:min(3, len(failed))])
		}
		alone = append(alone, a...)
		stop := make(chan struct{})
		heavyDone := make(chan []string, 1)
		sentBefore := heavyCount.Load()
		go func() {
			_, f := latencies(base+"heavy/search", 2, 0, func(i int) string { heavyCount.Add(1); return heavy[i%len(heavy)] }, stop)
			heavyDone <- f
		}()
		if r == 0 {
			baseline = residentBytes()
		}
		rss := watchRSS(t, stop)
		// The heavy team's load is up before the calm team's queries are
		// timed beside it: one of its requests answered (the broker knows
		// its cost), both of its clients sending.
		waitUntil(t, time.Minute, "the heavy team's load up", func() bool { return heavyCount.Load() >= sentBefore+3 })
		d, failed := latencies(base+"calm/search", 1, per, calm, nil)
		close(stop)
		heavyFailures := <-heavyDone // its last requests are done too
		peak = max(peak, <-rss)
		if len(failed) > 0 {
			t.Errorf("%d of the calm team's queries failed: %v", len(failed), failed[:min(3, len(failed))])
		}
		if len(heavyFailures) > 0 {
			t.Logf("the heavy team's 5xx: %d (%v)", len(heavyFailures), heavyFailures[:min(3, len(heavyFailures))])
		}
		during = append(during, d...)
	}
	slices.Sort(alone)
	slices.Sort(during)
	p50a, p99a, p50d, p99d := quantile(alone, 0.5), quantile(alone, 0.99), quantile(during, 0.5), quantile(during, 0.99)
	t.Logf("calm queries alone: p50 %s p99 %s; beside %d heavy requests: p50 %s p99 %s (%.2fx) (%d rounds of %d queries each); resident memory of the process (node and both clients) %d MB before the heavy team, %d MB at the peak",
		p50a, p99a, heavyCount.Load(), p50d, p99d, float64(p99d)/float64(p99a), rounds, per, baseline>>20, peak>>20)
	if peak-baseline > maxHeavyGrowth {
		t.Errorf("the process grew by %d MB beside the heavy team (%d to %d MB), over its bound of %d MB", (peak-baseline)>>20, baseline>>20, peak>>20, maxHeavyGrowth>>20)
	}
	if !testtier.Soak && p50d > 3*p50a {
		t.Errorf("the calm team's median went from %s to %s beside the heavy team (over 3x)", p50a, p50d)
	}
	if testtier.Soak && p99d > 2*p99a {
		t.Errorf("the calm team's p99 went from %s to %s beside the heavy team (over 2x)", p99a, p99d)
	}
}

// A noisy neighbour: team A offers five times its rate limit, with its
// most expensive requests; its excess is refused at once (429), each
// admitted search counting against its rate once per --rate-unit of its
// time, and team B's normal queries see no failure. With -quarry.long (more queries, a
// quiet machine) B's p99 must stay within 1.5x of its p99 alone, the
// goal; the short variant (CI, where other packages' tests share the two
// cores, and -race makes team A's admitted searches several times
// costlier) holds B's median to 3x and logs the p99s.
func TestNoisyNeighbour(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "title", Boost: 2}, {Field: "body"}}}
	docs, queries, long99 := 500, 200, 1.5
	if testtier.Soak {
		// 10,000 queries (about 10 s): team A gets some 20 searches
		// admitted meanwhile, not 4 or 5, so B's p99 is not set by a
		// handful of events (with 2,000, runs of one binary ranged
		// from 1.05x to 1.46x).
		docs, queries = 3000, 10000
	}
	g := corpusIndex(t, n, "noisy", 2, docs, qs)
	corpusIndex(t, n, "quiet", 2, docs, qs)
	const rate = 2.0 // team A's searches per second
	if _, err := n.Client().SetTeam(ctx, api.TeamSettings{Name: "index-noisy", Rate: rate, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	words := g.Words()
	base := "http://" + n.HTTPAddr + "/v1/indexes/"
	normal := func(i int) string {
		return fmt.Sprintf(`{"q":"%s %s","size":10,"fields":["title"]}`, words[(i*7)%300], words[(i*13+5)%300])
	}
	latencies(base+"quiet/search", 1, 50, normal, nil) // warm up
	alone, failed := latencies(base+"quiet/search", 1, queries, normal, nil)
	if len(failed) > 0 {
		t.Fatalf("alone: %d failures", len(failed))
	}
	// Team A: an open loop at 5x its rate, its heaviest requests within
	// the limits (those over them cost nothing to refuse).
	heavy := heavyRequests(words)[:6]
	stop := make(chan struct{})
	var sent, refused atomic.Int64
	// What reached team A's shards: refused searches must not (counted by
	// the searchers, not timed: a timed bound flaked on a loaded CI host).
	shardRequests := func() float64 {
		return max(0, sum(scrape(t, "http://"+n.HTTPAddr+"/metrics"), "quarry_searcher_requests_total", map[string]string{"index": "noisy"}))
	}
	reachedBefore := shardRequests()
	var loop sync.WaitGroup
	loop.Go(func() {
		hc := &http.Client{Timeout: 30 * time.Second}
		tick := time.NewTicker(time.Duration(float64(time.Second) / (5 * rate)))
		defer tick.Stop()
		var inflight sync.WaitGroup
		defer inflight.Wait()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			inflight.Go(func() {
				sent.Add(1)
				code, _, err := postTimed(hc, base+"noisy/search", heavy[i%len(heavy)])
				if err == nil && code == 429 {
					refused.Add(1)
				}
			})
		}
	})
	// Team A at its limit before team B's queries are timed: its
	// excess refused.
	waitUntil(t, 30*time.Second, "team A's excess refused", func() bool { return refused.Load() > 0 })
	during, failed := latencies(base+"quiet/search", 1, queries, normal, nil)
	close(stop)
	loop.Wait()
	p99a, p99d := quantile(alone, 0.99), quantile(during, 0.99)
	t.Logf("team B alone: p50 %s p99 %s; beside team A at 5x its rate (%d sent, %d refused with 429): p50 %s p99 %s (%.2fx)",
		quantile(alone, 0.5), p99a, sent.Load(), refused.Load(), quantile(during, 0.5), p99d, float64(p99d)/float64(p99a))
	if len(failed) > 0 {
		t.Errorf("%d of team B's queries failed: %v", len(failed), failed[:min(3, len(failed))])
	}
	if s, r := sent.Load(), refused.Load(); r < s/2 {
		t.Errorf("only %d of team A's %d searches were refused at 5x its rate", r, s)
	}
	// Each admitted search asks each of the 2 shards twice at most
	// (statistics, search), plus a few hedges before the broker has
	// found that one searcher serves them (none after: the hedge would go
	// to the same searcher). The refused, many times more, would add 4
	// each.
	admitted, reached := sent.Load()-refused.Load(), shardRequests()-reachedBefore
	t.Logf("team A's shards got %.0f requests for its %d admitted searches", reached, admitted)
	if reached > float64(4*admitted+4) {
		t.Errorf("team A's shards got %.0f requests for its %d admitted searches (%d refused): refused searches reached them", reached, admitted, refused.Load())
	}
	if p50a, p50d := quantile(alone, 0.5), quantile(during, 0.5); !testtier.Soak && p50d > 3*p50a {
		t.Errorf("team B's median went from %s to %s beside team A (over 3x)", p50a, p50d)
	}
	if testtier.Soak && float64(p99d) > long99*float64(p99a) {
		t.Errorf("team B's p99 went from %s to %s beside team A (over %gx)", p99a, p99d, long99)
	}
}
