package broker

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nuid"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// maxShadowCalls bounds shadow calls running at once: mirrored work is
// dropped rather than queued when the broker is busy.
const maxShadowCalls = 4

type shadowTally = api.ShadowTally

// shadows holds the broker's tallies and publishes them to the shadow
// bucket, where the admin API sums every broker's.
type shadows struct {
	id    string
	sem   chan struct{}
	mu    sync.Mutex
	tally map[string]*shadowTally // <index>.<plugin>
	dirty bool
}

func newShadows() *shadows {
	return &shadows{id: nuid.Next(), sem: make(chan struct{}, maxShadowCalls), tally: map[string]*shadowTally{}}
}

// mirror runs a ranker step's shadow on the same input, if it has one and
// this query is sampled, after the live call; it never delays the query.
func (b *Broker) mirror(index string, s *Step, req *abi.RankRequest, live *abi.RankResponse, liveErr error, liveTook time.Duration) {
	if s.Shadow == nil || rand.IntN(100) >= s.ShadowPercent {
		return
	}
	select {
	case b.shadows.sem <- struct{}{}:
	default:
		return // busy: skip this mirror
	}
	go func() {
		defer func() { <-b.shadows.sem }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		out, err := s.Shadow.Plugin.Rank(ctx, req)
		took := time.Since(start)
		key := index + "." + s.Plugin.Spec().Name
		b.shadows.mu.Lock()
		defer b.shadows.mu.Unlock()
		t := b.shadows.tally[key]
		if t == nil {
			t = &shadowTally{}
			b.shadows.tally[key] = t
		}
		b.shadows.dirty = true
		t.Calls++
		t.LiveNS += liveTook.Nanoseconds()
		t.ShadowNS += took.Nanoseconds()
		if liveErr != nil {
			t.LiveErrors++
		}
		if err != nil {
			t.ShadowErrors++
		}
		if liveErr != nil || err != nil {
			return
		}
		t.Queries++
		t.OverlapSum += overlapAt10(live.Ranked, out.Ranked)
		t.RhoSum += spearman(live.Ranked, out.Ranked, len(req.Candidates))
	}()
}

// overlapAt10 is the share of a's top 10 also in b's top 10.
func overlapAt10(a, b []abi.Ranked) float64 {
	n := min(10, len(a))
	if n == 0 {
		return 1
	}
	top := map[uint32]bool{}
	for _, e := range b[:min(10, len(b))] {
		top[e.Index] = true
	}
	hit := 0
	for _, e := range a[:n] {
		if top[e.Index] {
			hit++
		}
	}
	return float64(hit) / float64(n)
}

// spearman is the rank correlation of two orders of n candidates; a
// candidate an order dropped ranks after all it kept.
func spearman(a, b []abi.Ranked, n int) float64 {
	if n < 2 {
		return 1
	}
	pos := func(r []abi.Ranked) []float64 {
		p := make([]float64, n)
		for i := range p {
			p[i] = float64(n) // dropped
		}
		for i, e := range r {
			p[e.Index] = float64(i)
		}
		return p
	}
	pa, pb := pos(a), pos(b)
	var d2 float64
	for i := range pa {
		d := pa[i] - pb[i]
		d2 += d * d
	}
	nf := float64(n)
	return 1 - 6*d2/(nf*(nf*nf-1))
}

// publishShadows writes this broker's tallies to the shadow bucket every
// interval until ctx is done.
func (b *Broker) publishShadows(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.shadows.mu.Lock()
		if !b.shadows.dirty {
			b.shadows.mu.Unlock()
			continue
		}
		snap := map[string][]byte{}
		for k, v := range b.shadows.tally {
			snap[k+"."+b.shadows.id], _ = json.Marshal(v)
		}
		b.shadows.dirty = false
		b.shadows.mu.Unlock()
		for k, v := range snap {
			if _, err := b.store.Shadow.Put(ctx, k, v); err != nil && ctx.Err() == nil {
				b.cfg.Logger.Warn("publish shadow tallies", "err", err)
			}
		}
	}
}
