package searcher

import (
	"context"
	"sync"
	"sync/atomic"
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
//
// A heavy team's request that runs also gives way at its checkpoints
// (shard.Checkpoint, heavyTurn): it waits while requests of teams that
// are not heavy are queued or running, and for a short linger after the
// last of them is done, up to a budget, so that a light search need not
// share a core with it.
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

	// light counts the queued and running requests of teams that were
	// not heavy when they came (job.light); lightDone is closed when it
	// falls to 0, and made anew when it rises from 0 (both under mu).
	light     atomic.Int64
	lightDone chan struct{}
	// lightLast is when a light request was last done (unix nanoseconds):
	// a heavy request lingers a little after it (Config.HeavyLinger).
	lightLast atomic.Int64
}

// teamQueue is one team's waiting requests and what it is running.
type teamQueue struct {
	name     string
	jobs     []job
	running  int
	inRing   bool
	cost     time.Duration // moving mean of recent service times
	known    bool          // a request of the team ended: cost means something
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
	j.light = !q.heavy(t)
	if j.light && q.light.Add(1) == 1 {
		q.lightDone = make(chan struct{})
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

// heavy reports whether t's recent requests are expensive (under mu).
func (q *fairQueue) heavy(t *teamQueue) bool {
	// A team none of whose requests has ended yet is not known to be
	// light: its first request may be a 2-second wildcard over every
	// term, which, taken for light, would run on every core at once and
	// never give way (issue 34). It is held as a heavy team's until one
	// ends, which for a light team is a few milliseconds.
	return q.heavyAfter > 0 && (t.cost > q.heavyAfter || !t.known)
}

// capOf is how many of t's requests may run at once.
func (q *fairQueue) capOf(t *teamQueue, now time.Time) int {
	if !q.heavy(t) {
		return q.workers
	}
	for _, o := range q.teams {
		if o != t && (o.running > 0 || now.Sub(o.lastSeen) < otherTeamWindow) {
			return q.heavyCap
		}
	}
	return q.workers
}

// done records that j, one of t's requests, took took to serve.
func (q *fairQueue) done(t *teamQueue, j job, took time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if j.light {
		q.lightLast.Store(time.Now().UnixNano())
		if q.light.Add(-1) == 0 {
			close(q.lightDone)
		}
	}
	t.running--
	if !t.known {
		t.cost, t.known = took, true
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

// heavyWaitOnce bounds one wait of a heavy request at a checkpoint: a
// light team that sends requests back to back never lets the count of
// its requests fall to 0, and the heavy request must still move on.
const heavyWaitOnce = 2 * time.Millisecond

// heavyTurn is a heavy team's running request giving way to the light
// teams' requests at its checkpoints, for at most left in all.
type heavyTurn struct {
	q      *fairQueue
	left   time.Duration
	linger time.Duration // Config.HeavyLinger; 0: none
	waited time.Duration
}

// checkpoint waits while light requests are queued or running, until they
// are done, heavyWaitOnce has passed or the budget is spent, and after the
// last of them for what is left of the linger; it returns ctx's error if
// ctx ends first. Nothing to wait for costs an atomic load (and a clock
// read with a linger).
func (h *heavyTurn) checkpoint(ctx context.Context) error {
	if h.left <= 0 {
		return nil
	}
	var ch chan struct{}
	d := min(h.left, heavyWaitOnce)
	if h.q.light.Load() == 0 {
		if h.linger <= 0 {
			return nil
		}
		since := time.Duration(time.Now().UnixNano() - h.q.lightLast.Load())
		if since >= h.linger {
			return nil
		}
		d = min(h.left, h.linger-since)
	} else {
		h.q.mu.Lock()
		ch = h.q.lightDone
		n := h.q.light.Load()
		h.q.mu.Unlock()
		if n == 0 {
			return nil
		}
	}
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch: // nil while lingering: only the timer ends that wait
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	took := time.Since(start)
	h.left -= took
	h.waited += took
	return nil
}
