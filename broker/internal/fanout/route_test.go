package fanout

import (
	"testing"
	"time"
)

// newShardState is a shard's state with replicas answering in the given
// times, each seen now.
func newShardState(t *testing.T, answers map[string]time.Duration) *shardState {
	t.Helper()
	s := &shardState{index: "menu", shard: 0, subject: "quarry.v1.search.menu.0"}
	for id, d := range answers {
		s.observeReplica(id, d)
	}
	return s
}

// TestChoosePrimary: the better of two replicas by outstanding requests
// first, then answer time; none with fewer than two live ones.
func TestChoosePrimary(t *testing.T) {
	if _, ok := newShardState(t, map[string]time.Duration{"a": time.Millisecond}).choosePrimary(); ok {
		t.Error("one replica: a primary chosen, want none (the queue group picks)")
	}
	s := newShardState(t, map[string]time.Duration{"fast": time.Millisecond, "slow": 10 * time.Millisecond})
	for range 50 {
		if got, ok := s.choosePrimary(); !ok || got != "fast" {
			t.Fatalf("fast and slow, none busy: chose %q %v, want fast", got, ok)
		}
	}
	s.begin("fast") // a request outstanding outweighs any answer time
	for range 50 {
		if got, _ := s.choosePrimary(); got != "slow" {
			t.Fatalf("fast busy: chose %q, want slow", got)
		}
	}
	s.end("fast")
	s.end("fast") // never below zero
	if got, _ := s.choosePrimary(); got != "fast" {
		t.Fatalf("fast idle again: chose %q", got)
	}
}

// TestChoosePrimarySpreads: among three equal replicas, every one is
// chosen (two random choices, not always the first).
func TestChoosePrimarySpreads(t *testing.T) {
	s := newShardState(t, map[string]time.Duration{"a": time.Millisecond, "b": time.Millisecond, "c": time.Millisecond})
	seen := map[string]int{}
	for range 300 {
		got, _ := s.choosePrimary()
		seen[got]++
	}
	if len(seen) != 3 {
		t.Fatalf("chosen %v, want each of a, b and c", seen)
	}
}

// TestChooseHedge: the best replica but the primary; none when the
// primary is the only one.
func TestChooseHedge(t *testing.T) {
	s := newShardState(t, map[string]time.Duration{"a": time.Millisecond, "b": 5 * time.Millisecond, "c": 2 * time.Millisecond})
	if got, ok := s.chooseHedge("a"); !ok || got != "c" {
		t.Fatalf("hedge beside a: %q %v, want c", got, ok)
	}
	if got, _ := s.chooseHedge("c"); got != "a" {
		t.Fatalf("hedge beside c: %q, want a", got)
	}
	one := newShardState(t, map[string]time.Duration{"a": time.Millisecond})
	if got, ok := one.chooseHedge("a"); ok {
		t.Fatalf("hedge beside the only replica: %q", got)
	}
}

// TestReplicasExpire: a replica not seen for replicaTTL is dropped, unless
// a request to it is still outstanding; a forgotten one is gone at once.
func TestReplicasExpire(t *testing.T) {
	s := newShardState(t, map[string]time.Duration{"old": time.Millisecond, "busy": time.Millisecond, "new": time.Millisecond, "gone": time.Millisecond})
	s.begin("busy")
	long := time.Now().Add(-2 * replicaTTL)
	s.replicas["old"].seen, s.replicas["busy"].seen = long, long
	s.forget("gone")
	if got, ok := s.chooseHedge("new"); !ok || got != "busy" {
		t.Fatalf("hedge beside new: %q %v, want busy (old expired, gone forgotten)", got, ok)
	}
	if s.known("old") || s.known("gone") || !s.known("busy") {
		t.Fatalf("known: old %v, gone %v, busy %v", s.known("old"), s.known("gone"), s.known("busy"))
	}
}

// TestEWMA: a replica's answer time follows its recent answers.
func TestEWMA(t *testing.T) {
	s := newShardState(t, map[string]time.Duration{"a": 10 * time.Millisecond})
	if got := time.Duration(s.replicas["a"].ewma); got != 10*time.Millisecond {
		t.Fatalf("first sample: %v", got)
	}
	for range 40 {
		s.observeReplica("a", time.Millisecond)
	}
	if got := time.Duration(s.replicas["a"].ewma); got > 1100*time.Microsecond {
		t.Fatalf("after 40 answers of 1ms: %v", got)
	}
}

// TestLatencyQuantile: no quantile under 16 samples; over the last
// latencyWindow answers once the window has wrapped.
func TestLatencyQuantile(t *testing.T) {
	s := newShardState(t, nil)
	for i := range 15 {
		s.observe(time.Duration(i+1)*time.Millisecond, "")
	}
	if _, ok := s.quantile(0.5); ok {
		t.Fatal("a quantile of 15 samples")
	}
	s.observe(16*time.Millisecond, "")
	if got, ok := s.quantile(0.5); !ok || got != 8*time.Millisecond {
		t.Fatalf("p50 of 1..16 ms: %v %v, want 8ms", got, ok)
	}
	// latencyWindow samples of 100 ms push the early ones out.
	for range latencyWindow {
		s.observe(100*time.Millisecond, "a")
	}
	if got, _ := s.quantile(0); got != 100*time.Millisecond {
		t.Fatalf("minimum after the window wrapped: %v, want 100ms", got)
	}
	if !s.known("a") {
		t.Fatal("observe with a replica did not record it")
	}
}

// TestHedgeBudget: a burst of hedgeBurst at start, then maxFraction of
// the shard requests since, at most hedgeBucket banked.
func TestHedgeBudget(t *testing.T) {
	var h hedgeBudget
	for i := range hedgeBurst {
		if !h.allow() {
			t.Fatalf("hedge %d of the start's burst refused", i+1)
		}
	}
	if h.allow() {
		t.Fatal("a hedge past the burst with no requests")
	}
	drain := func() int {
		n := 0
		for h.allow() {
			n++
		}
		return n
	}
	for range 100 {
		h.request(0.05)
	}
	if n := drain(); n != 5 || h.hedges.Load() != 7 {
		t.Fatalf("after 100 requests: %d more hedges, %d in all; want 5 and 7", n, h.hedges.Load())
	}
	for range 10000 { // a quiet spell banks hedgeBucket at most
		h.request(0.05)
	}
	if n := drain(); n != hedgeBucket {
		t.Fatalf("after 10,000 requests with no hedge: %d hedges at once, want %d", n, hedgeBucket)
	}
	if h.requests.Load() != 10100 {
		t.Fatalf("requests %d, want 10100", h.requests.Load())
	}
}

// TestSubjects: a request goes to the shard's queue group, or to one
// replica's own subject.
func TestSubjects(t *testing.T) {
	s := newShardState(t, map[string]time.Duration{"r1": time.Millisecond})
	if got := s.subjectOf(""); got != s.subject {
		t.Fatalf("any replica: %q", got)
	}
	if got := s.subjectOf("r1"); got == s.subject || got == "" {
		t.Fatalf("replica r1: %q", got)
	}
}
