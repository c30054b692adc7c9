package searcher

import (
	"sync"
	"time"
)

// fairQueue holds the shard requests waiting for a worker: a FIFO per team
// (an index's team, api.IndexDefinition.TeamOf), served round-robin, so a
// team sending many requests waits behind its own, not in front of
// everyone else's. A team whose recent requests are expensive (their mean
// service time is over heavyAfter) runs at most heavyCap of them at once
// while another team is active, keeping cores free for the others: a Go
// program cannot preempt a search once it runs, so the only way to keep a
// heavy team from taking every core is not to start its work. A team alone
// on the searcher runs as many as there are workers.
type fairQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	teams  map[string]*teamQueue
	ring   []*teamQueue // teams with waiting requests, in service order
	queued int
	closed bool

	maxQueued  int
	workers    int
	heavyCap   int
	heavyAfter time.Duration
}

// teamQueue is one team's waiting requests and what it is running.
type teamQueue struct {
	name     string
	jobs     []job
	running  int
	inRing   bool
	cost     time.Duration // moving mean of recent service times
	lastSeen time.Time
}

// otherTeamWindow is how recently another team must have sent a request
// for a heavy team to be held to heavyCap.
const otherTeamWindow = time.Second

func newFairQueue(maxQueued, workers, heavyCap int, heavyAfter time.Duration) *fairQueue {
	q := &fairQueue{teams: map[string]*teamQueue{}, maxQueued: maxQueued, workers: workers, heavyCap: heavyCap, heavyAfter: heavyAfter}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// push queues j for team, or reports false when the queue is full.
func (q *fairQueue) push(team string, j job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.queued >= q.maxQueued || q.closed {
		return false
	}
	t := q.teams[team]
	if t == nil {
		t = &teamQueue{name: team}
		q.teams[team] = t
	}
	t.jobs = append(t.jobs, j)
	t.lastSeen = j.at
	if !t.inRing {
		t.inRing = true
		q.ring = append(q.ring, t)
	}
	q.queued++
	q.cond.Signal()
	return true
}

// next waits for a request a worker may run and takes it; false once the
// queue is closed.
func (q *fairQueue) next() (job, *teamQueue, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.closed {
			return job{}, nil, false
		}
		now := time.Now()
		for i, t := range q.ring {
			if t.running >= q.capOf(t, now) {
				continue
			}
			j := t.jobs[0]
			t.jobs[0] = job{}
			t.jobs = t.jobs[1:]
			t.running++
			q.queued--
			// Round-robin: the team goes to the back of the ring, or
			// leaves it with nothing left to wait.
			q.ring = append(q.ring[:i], q.ring[i+1:]...)
			if len(t.jobs) > 0 {
				q.ring = append(q.ring, t)
			} else {
				t.inRing = false
				t.jobs = nil
			}
			return j, t, true
		}
		q.cond.Wait()
	}
}

// capOf is how many of t's requests may run at once.
func (q *fairQueue) capOf(t *teamQueue, now time.Time) int {
	if q.heavyAfter <= 0 || t.cost <= q.heavyAfter {
		return q.workers
	}
	for _, o := range q.teams {
		if o != t && (o.running > 0 || now.Sub(o.lastSeen) < otherTeamWindow) {
			return q.heavyCap
		}
	}
	return q.workers
}

// done records that one of t's requests took took to serve.
func (q *fairQueue) done(t *teamQueue, took time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t.running--
	if t.cost == 0 {
		t.cost = took
	} else {
		t.cost += (took - t.cost) / 8
	}
	q.cond.Broadcast() // a team held to its cap may go on
}

// len is how many requests wait.
func (q *fairQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued
}

// close wakes every waiting worker for good.
func (q *fairQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}
