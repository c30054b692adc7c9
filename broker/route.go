package broker

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// replicaTTL is how long a replica seen in a reply stays a hedge target.
const replicaTTL = 30 * time.Second

// latencyWindow is how many recent answers a shard's latency quantile is
// computed over.
const latencyWindow = 128

// shardState is what a broker learns about one shard from its answers: its
// recent latencies (for the hedge delay) and the replicas serving it (so a
// hedge goes to a different one).
type shardState struct {
	mu       sync.Mutex
	lat      [latencyWindow]time.Duration
	n        int // samples recorded, up to latencyWindow
	next     int
	sorted   []time.Duration // lat sorted, rebuilt every 16 samples
	dirty    int
	replicas map[string]time.Time
}

func (s *shardState) observe(d time.Duration, replica string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat[s.next] = d
	s.next = (s.next + 1) % latencyWindow
	s.n = min(s.n+1, latencyWindow)
	s.dirty++
	if replica != "" {
		if s.replicas == nil {
			s.replicas = map[string]time.Time{}
		}
		s.replicas[replica] = time.Now()
	}
}

// quantile returns the q-quantile of recent latencies, or false with fewer
// than 16 samples.
func (s *shardState) quantile(q float64) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n < 16 {
		return 0, false
	}
	if s.dirty >= 16 || s.sorted == nil {
		s.sorted = append(s.sorted[:0], s.lat[:s.n]...)
		slices.Sort(s.sorted)
		s.dirty = 0
	}
	return s.sorted[int(q*float64(len(s.sorted)-1))], true
}

// pick returns a live replica other than not, at random.
func (s *shardState) pick(not string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var live []string
	for id, seen := range s.replicas {
		if now.Sub(seen) > replicaTTL {
			delete(s.replicas, id)
			continue
		}
		if id != not {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		return "", false
	}
	return live[rand.IntN(len(live))], true
}

// liveReplicas counts replicas seen recently.
func (s *shardState) liveReplicas() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, seen := range s.replicas {
		if time.Since(seen) <= replicaTTL {
			n++
		}
	}
	return n
}

func (s *shardState) forget(replica string) {
	s.mu.Lock()
	delete(s.replicas, replica)
	s.mu.Unlock()
}

// shardStates holds the state of every shard the broker has asked.
type shardStates struct {
	mu sync.Mutex
	m  map[shardKey]*shardState
}

type shardKey struct {
	index string
	shard int
}

func (ss *shardStates) get(index string, shard int) *shardState {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = map[shardKey]*shardState{}
	}
	k := shardKey{index, shard}
	s := ss.m[k]
	if s == nil {
		s = &shardState{}
		ss.m[k] = s
	}
	return s
}

// hedgeBudget caps hedges to a share of shard requests.
type hedgeBudget struct {
	requests, hedges, won atomic.Int64
}

func (h *hedgeBudget) allow(maxFraction float64) bool {
	for {
		n := h.hedges.Load()
		if float64(n+1) > maxFraction*float64(h.requests.Load()) {
			return false
		}
		if h.hedges.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// HedgeStats reports shard requests, hedges sent and hedges that answered
// first, since start.
func (b *Broker) HedgeStats() (requests, hedges, won int64) {
	return b.hedge.requests.Load(), b.hedge.hedges.Load(), b.hedge.won.Load()
}
