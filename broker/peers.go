package broker

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/internal/subject"
)

// peers counts the brokers of the cluster, this one included, from their
// heartbeats (subject.BrokerHeartbeat): a broker heard from within
// peerTimeout heartbeats is up. The count divides each team's rate limit:
// NATS spreads a team's searches over the brokers' queue group, so with N
// brokers each admits 1/N of the team's rate and the cluster admits about
// the rate, not N times it.
type peers struct {
	self  string
	every time.Duration
	// changed is called with the new count when it changes.
	changed func(n int)

	mu   sync.Mutex
	seen map[string]time.Time // broker id → last heartbeat
	n    int
}

// peerTimeout is how many heartbeat intervals a broker may miss before
// it is counted out.
const peerTimeout = 3

func newPeers(self string, every time.Duration, changed func(int)) *peers {
	return &peers{self: self, every: every, changed: changed, seen: map[string]time.Time{}, n: 1}
}

// heard records a heartbeat from broker id.
func (p *peers) heard(id string, now time.Time) {
	p.mu.Lock()
	p.seen[id] = now
	p.mu.Unlock()
}

// count drops the brokers not heard from in time, and reports the count
// (at least 1: this broker) to changed when it moved.
func (p *peers) count(now time.Time) int {
	p.mu.Lock()
	for id, at := range p.seen {
		if id != p.self && now.Sub(at) > peerTimeout*p.every {
			delete(p.seen, id)
		}
	}
	n := len(p.seen)
	if _, ok := p.seen[p.self]; !ok {
		n++
	}
	moved := n != p.n
	p.n = n
	p.mu.Unlock()
	if moved && p.changed != nil {
		p.changed(n)
	}
	return n
}

// run sends this broker's heartbeat and counts the others' until ctx is
// done.
func (p *peers) run(ctx context.Context, nc *nats.Conn) error {
	sub, err := nc.Subscribe(subject.BrokerHeartbeat, func(m *nats.Msg) {
		if len(m.Data) > 0 && len(m.Data) <= 64 {
			p.heard(string(m.Data), time.Now())
		}
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		_ = nc.Publish(subject.BrokerHeartbeat, []byte(p.self))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		p.count(time.Now())
	}
}
