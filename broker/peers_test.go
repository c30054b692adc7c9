package broker

import (
	"testing"
	"time"
)

// Brokers heard from count, this one always; one not heard from in
// peerTimeout heartbeats is counted out; each change is reported once;
// the team limits divide a rate by the count.
func TestPeersCount(t *testing.T) {
	var changes []int
	p := newPeers("me", time.Second, func(n int) { changes = append(changes, n) })
	now := time.Unix(1000, 0)
	if n := p.count(now); n != 1 {
		t.Fatalf("alone: %d", n)
	}
	p.heard("me", now)
	p.heard("b", now)
	p.heard("c", now.Add(2*time.Second))
	if n := p.count(now.Add(2 * time.Second)); n != 3 {
		t.Fatalf("three up: %d", n)
	}
	if n := p.count(now.Add(4 * time.Second)); n != 2 { // b: 4 s, over 3 heartbeats
		t.Fatalf("b gone: %d", n)
	}
	if n := p.count(now.Add(10 * time.Second)); n != 1 { // c gone; me stays
		t.Fatalf("alone again: %d", n)
	}
	if len(changes) != 3 || changes[0] != 3 || changes[1] != 2 || changes[2] != 1 {
		t.Fatalf("changes reported: %v", changes)
	}
}
