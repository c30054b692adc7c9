package fanout

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/internal/gather"
	"github.com/quarrysearch/quarry/internal/subject"
)

// replicaTTL is how long a replica seen in a reply stays a hedge target.
const replicaTTL = 30 * time.Second

// latencyWindow is how many recent answers a shard's latency quantile is
// computed over.
const latencyWindow = 128

// shardState is what a broker learns about one shard from its answers: its
// recent latencies (for the hedge delay) and, per replica serving it, when
// it was last seen, how fast it answers (EWMA) and how many requests it has
// outstanding, so requests go to the better of two replicas and a hedge to
// the best other one.
type shardState struct {
	index   string
	shard   int
	subject string // the shard's queue-group subject

	mu       sync.Mutex
	lat      [latencyWindow]time.Duration
	n        int // samples recorded, up to latencyWindow
	next     int
	sorted   []time.Duration // lat sorted, rebuilt every 16 samples
	dirty    int
	replicas map[string]*replicaInfo
	// discovering is set while a replica discovery runs; lastDiscovery is
	// when the last one started.
	discovering   atomic.Bool
	lastDiscovery atomic.Int64
}

// discoveryEvery is how often a shard's replicas are rediscovered.
const discoveryEvery = 5 * time.Second

// discoveryWait is how long a discovery collects answers.
const discoveryWait = 50 * time.Millisecond

// discover asks every searcher serving the shard for its replica id, in the
// background, at most every discoveryEvery.
func (s *shardState) discover(nc *nats.Conn, index string, shard int) {
	if time.Since(time.Unix(0, s.lastDiscovery.Load())) < discoveryEvery || !s.discovering.CompareAndSwap(false, true) {
		return
	}
	s.lastDiscovery.Store(time.Now().UnixNano())
	go func() {
		defer s.discovering.Store(false)
		_ = gather.Replies(context.Background(), nc, subject.Replicas(index, shard), nil, discoveryWait, func(m *nats.Msg) {
			if len(m.Data) > 0 && len(m.Data) <= 64 {
				s.mu.Lock()
				s.replicaLocked(string(m.Data)).seen = time.Now()
				s.mu.Unlock()
			}
		})
	}()
}

type replicaInfo struct {
	subject     string // the replica's own subject for this shard
	seen        time.Time
	ewma        float64 // answer time, ns
	outstanding int
}

// ewmaAlpha weighs a new latency sample.
const ewmaAlpha = 0.2

func (s *shardState) observe(d time.Duration, replica string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat[s.next] = d
	s.next = (s.next + 1) % latencyWindow
	s.n = min(s.n+1, latencyWindow)
	s.dirty++
	if replica != "" {
		s.replicaLocked(replica).update(d)
	}
}

// observeReplica records a replica's answer time without counting it in the
// shard's latency window (a losing or late answer).
func (s *shardState) observeReplica(replica string, d time.Duration) {
	s.mu.Lock()
	s.replicaLocked(replica).update(d)
	s.mu.Unlock()
}

func (r *replicaInfo) update(d time.Duration) {
	r.seen = time.Now()
	if r.ewma == 0 {
		r.ewma = float64(d)
	} else {
		r.ewma += ewmaAlpha * (float64(d) - r.ewma)
	}
}

func (s *shardState) replicaLocked(id string) *replicaInfo {
	if s.replicas == nil {
		s.replicas = map[string]*replicaInfo{}
	}
	r := s.replicas[id]
	if r == nil {
		r = &replicaInfo{seen: time.Now(), subject: subject.Replica(id, s.index, s.shard)}
		s.replicas[id] = r
	}
	return r
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

// live returns the replicas seen within replicaTTL, except not, dropping
// the expired ones. Callers hold s.mu.
func (s *shardState) liveLocked(not string) []string {
	now := time.Now()
	var live []string
	for id, r := range s.replicas {
		if now.Sub(r.seen) > replicaTTL && r.outstanding == 0 {
			delete(s.replicas, id)
			continue
		}
		if id != not {
			live = append(live, id)
		}
	}
	return live
}

// cost orders replicas: fewer outstanding requests first, then faster.
func (r *replicaInfo) cost() float64 {
	return float64(r.outstanding)*1e12 + r.ewma
}

// choosePrimary picks the better of two random live replicas ("power of
// two choices"), or false with fewer than two.
func (s *shardState) choosePrimary() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := s.liveLocked("")
	if len(live) < 2 {
		return "", false
	}
	i := rand.IntN(len(live))
	j := (i + 1 + rand.IntN(len(live)-1)) % len(live) // a different one
	a, b := live[i], live[j]
	if s.replicas[b].cost() < s.replicas[a].cost() {
		a = b
	}
	return a, true
}

// soleReplica reports whether the shard's last discovery is over and
// found one live replica: the queue group's request went to it, and a
// hedge would only ask the same searcher again.
func (s *shardState) soleReplica() bool {
	if s.lastDiscovery.Load() == 0 || s.discovering.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.liveLocked("")) == 1
}

// chooseHedge picks the best live replica other than not.
func (s *shardState) chooseHedge(not string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	best := ""
	for _, id := range s.liveLocked(not) {
		if best == "" || s.replicas[id].cost() < s.replicas[best].cost() {
			best = id
		}
	}
	return best, best != ""
}

// begin and end count a request outstanding on a replica.
func (s *shardState) begin(replica string) {
	if replica == "" {
		return
	}
	s.mu.Lock()
	s.replicaLocked(replica).outstanding++
	s.mu.Unlock()
}

func (s *shardState) end(replica string) {
	if replica == "" {
		return
	}
	s.mu.Lock()
	if r := s.replicas[replica]; r != nil && r.outstanding > 0 {
		r.outstanding--
	}
	s.mu.Unlock()
}

// subjectOf is where a request for a replica ("": any, through the queue
// group) goes; subjects are built once per shard and replica.
func (s *shardState) subjectOf(replica string) string {
	if replica == "" {
		return s.subject
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replicaLocked(replica).subject
}

// hedgeRecheck is how often a request whose hedge the budget refused
// looks again whether its replica is gone.
const hedgeRecheck = 20 * time.Millisecond

// known reports whether a replica is still known (not found gone).
func (s *shardState) known(replica string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replicas[replica] != nil
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
		s = &shardState{index: index, shard: shard, subject: subject.Shard(index, shard)}
		ss.m[k] = s
	}
	return s
}

// hedgeBudget caps hedges to a share of shard requests: a bucket that
// every shard request fills by maxFraction of a hedge, up to hedgeBucket,
// and every hedge empties by one; it starts with hedgeBurst, so the first
// slow answers after start can be hedged too. A run of slow answers takes
// at most hedgeBucket hedges at once, and a quiet spell banks no more:
// the budget was maxFraction of every request since start, which let a
// long quiet spell bank thousands of hedges (a slow moment could then
// double the load on a struggling shard for as long), and made a burst
// of hedges at start a debt that refused every hedge for thousands of
// requests after (the likely cause of a CI run of TestFaultSlowShard in
// which a search waited its whole second, unhedged).
type hedgeBudget struct {
	requests, hedges, won atomic.Int64

	mu      sync.Mutex
	tokens  int64 // millionths of a hedge: sums of fractions stay exact
	started bool
}

const (
	hedgeBurst  = 2
	hedgeBucket = 10
	hedgeUnit   = 1_000_000 // a hedge, in tokens
)

// request counts a shard request, and fills the bucket by maxFraction.
func (h *hedgeBudget) request(maxFraction float64) {
	h.requests.Add(1)
	h.mu.Lock()
	h.start()
	h.tokens = min(h.tokens+int64(maxFraction*hedgeUnit), hedgeBucket*hedgeUnit)
	h.mu.Unlock()
}

// allow takes a hedge from the bucket, if it holds one.
func (h *hedgeBudget) allow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.start()
	if h.tokens < hedgeUnit {
		return false
	}
	h.tokens -= hedgeUnit
	h.hedges.Add(1)
	return true
}

func (h *hedgeBudget) start() {
	if !h.started {
		h.tokens, h.started = hedgeBurst*hedgeUnit, true
	}
}
