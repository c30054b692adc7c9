package admission

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Config is an Admission's sizes and limits. Zero values mean none unless
// said otherwise; the owner (the broker's or the searcher's Config)
// fills in its defaults.
type Config struct {
	// MaxQueued is how many requests may wait for a worker; Push refuses
	// more (ErrFull).
	MaxQueued int
	// MaxHeld, if not 0, bounds the requests waiting and running
	// together: Push refuses one more (ErrFull).
	MaxHeld int
	// MaxWait bounds a request's wait in the queue: past it Next hands it
	// out marked Expired, for the owner to refuse (0: no bound).
	MaxWait time.Duration
	// HeavyAfter marks a team heavy when the mean cost of its recent
	// requests (what Done is told) is over it (<= 0: never).
	HeavyAfter time.Duration
	// HeavyTurns is how many requests of a heavy team run at once while
	// another team is active (at least 1).
	HeavyTurns int
	// NewTeamsHeavy holds a team none of whose requests has ended as a
	// heavy one: its first request may be a 2-second wildcard over every
	// term, which, taken for light, runs on every core at once.
	NewTeamsHeavy bool
	// TeamInFlight is how many requests of one team Admit lets be in
	// flight at once, unless the team's settings say otherwise (0: no cap).
	TeamInFlight int
	// RateUnit is what one request is under a team's rate: it counts once
	// for each RateUnit of its cost begun (<= 0: once, whatever its cost).
	RateUnit time.Duration
}

// ErrFull is Push's refusal: MaxQueued requests wait already.
var ErrFull = errors.New("admission: queue full")

// otherTeamWindow is how recently another team must have come for a heavy
// team to be held to the heavy turns.
const otherTeamWindow = time.Second

// Admission is one service's admission of its teams' requests of type J.
// It is safe for concurrent use.
type Admission[J any] struct {
	cfg Config
	// brokers divides every team's rate (SetBrokers).
	brokers atomic.Int32
	// applyMu orders the writers of teams' limits (Apply, SetBrokers).
	applyMu sync.Mutex

	// teamsMu guards teams; taken under mu, never the other way.
	teamsMu sync.RWMutex
	teams   map[string]*Team

	mu      sync.Mutex
	cond    *sync.Cond
	ring    []*Team            // teams with waiting requests, in service order
	waiting map[*Team]*fifo[J] // each team's, kept while it is empty
	queued  int
	running int
	closed  bool
	wake    *time.Timer // wakes Next when the first waiting request expires
	wakeAt  time.Time

	// light counts the queued and running requests of teams that were
	// not heavy when they came; lightDone, made when a checkpoint waits
	// for it (Turn), is closed when light falls to 0 (both under mu).
	light     atomic.Int64
	lightDone chan struct{}
	// lightLast is when a light request was last done (Unix ns).
	lightLast atomic.Int64
}

// Item is a request handed out by Next: the owner serves it, or refuses
// it if Expired, and gives it back with Done.
type Item[J any] struct {
	Job  J
	Team *Team
	// At is when it was pushed; Queued how long it waited.
	At     time.Time
	Queued time.Duration
	// Expired: it waited past Config.MaxWait; the owner refuses it.
	Expired bool
	// Light: its team was not heavy when it came; a request that is not
	// gives way at its checkpoints (Turn).
	Light bool
}

// New returns an Admission with cfg.
func New[J any](cfg Config) *Admission[J] {
	cfg.HeavyTurns = max(1, cfg.HeavyTurns)
	a := &Admission[J]{cfg: cfg, teams: map[string]*Team{}, waiting: map[*Team]*fifo[J]{}}
	a.brokers.Store(1)
	a.cond = sync.NewCond(&a.mu)
	return a
}

// fifo is one team's waiting requests. Its buffer is kept when it empties:
// a request through an idle queue allocates nothing.
type fifo[J any] struct {
	items []Item[J]
	head  int
}

func (f *fifo[J]) len() int { return len(f.items) - f.head }

// pop takes the first request (the caller knows there is one).
func (f *fifo[J]) pop() Item[J] {
	it := f.items[f.head]
	f.items[f.head] = Item[J]{}
	if f.head++; f.head == len(f.items) {
		f.items, f.head = f.items[:0], 0
	}
	return it
}

// Push queues j for team t (Admit's, or Team's), or returns ErrFull.
// Next hands it out, and Done takes it back; an in-flight slot Admit took
// is Release's.
func (a *Admission[J]) Push(t *Team, j J) error {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.queued >= a.cfg.MaxQueued || (a.cfg.MaxHeld > 0 && a.queued+a.running >= a.cfg.MaxHeld) || a.closed {
		return ErrFull
	}
	it := Item[J]{Job: j, Team: t, At: now, Light: !a.heavy(t)}
	if it.Light {
		a.light.Add(1)
	}
	t.lastSeen.Store(now.UnixNano())
	f := a.waiting[t]
	if f == nil {
		f = &fifo[J]{}
		a.waiting[t] = f
	}
	if f.len() == 0 {
		a.ring = append(a.ring, t)
	}
	f.items = append(f.items, it)
	a.queued++
	a.cond.Signal()
	return nil
}

// Next waits for a request a worker may run and takes it; false once
// Close was called. The owner runs a fixed number of workers calling it:
// that number is how many requests run at once.
func (a *Admission[J]) Next() (Item[J], bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		if a.closed {
			return Item[J]{}, false
		}
		now := time.Now()
		var first time.Time // the earliest expiry of a request left waiting
		for i, t := range a.ring {
			f := a.waiting[t]
			oldest := f.items[f.head].At
			expired := a.cfg.MaxWait > 0 && now.Sub(oldest) >= a.cfg.MaxWait
			if !expired {
				if a.heldBack(t, now) {
					if a.cfg.MaxWait > 0 {
						if at := oldest.Add(a.cfg.MaxWait); first.IsZero() || at.Before(first) {
							first = at
						}
					}
					continue
				}
			}
			it := f.pop()
			a.queued--
			a.ring = append(a.ring[:i], a.ring[i+1:]...)
			if f.len() > 0 {
				a.ring = append(a.ring, t) // round-robin: to the back
			}
			it.Queued = now.Sub(it.At)
			if expired {
				it.Expired = true
				if it.Light {
					a.lightEnded(now)
				}
				return it, true
			}
			a.running++
			t.running++
			if a.queued > 0 {
				// Pass it on: another request may be free to run too
				// (Push and Done wake one worker each).
				a.cond.Signal()
			}
			return it, true
		}
		if !first.IsZero() && (a.wake == nil || !a.wakeAt.Equal(first)) {
			if a.wake != nil {
				a.wake.Stop()
			}
			a.wakeAt = first
			a.wake = time.AfterFunc(time.Until(first), func() {
				a.mu.Lock()
				a.cond.Signal()
				a.mu.Unlock()
			})
		}
		a.cond.Wait()
	}
}

// Done gives back a request Next handed out (not an expired one) that
// cost cost: the team's mean cost, its running count and the heavy turn
// it held.
func (a *Admission[J]) Done(it Item[J], cost time.Duration) {
	if it.Expired {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if it.Light {
		a.lightEnded(now)
	}
	a.running--
	it.Team.running--
	it.Team.observe(cost)
	if a.queued > 0 {
		a.cond.Signal() // one worker or heavy turn came free: one request may go on
	}
}

// lightEnded counts a light request done (under mu).
func (a *Admission[J]) lightEnded(now time.Time) {
	a.lightLast.Store(now.UnixNano())
	if a.light.Add(-1) == 0 && a.lightDone != nil {
		close(a.lightDone)
		a.lightDone = nil
	}
}

// heavy reports whether t's recent requests are expensive (under mu).
func (a *Admission[J]) heavy(t *Team) bool {
	if a.cfg.HeavyAfter <= 0 {
		return false
	}
	if !t.known.Load() {
		return a.cfg.NewTeamsHeavy
	}
	return time.Duration(t.cost.Load()) > a.cfg.HeavyAfter
}

// heldBack reports whether t's next request must wait for its turn: t is
// heavy, another team is active, and t runs HeavyTurns requests already
// (under mu).
func (a *Admission[J]) heldBack(t *Team, now time.Time) bool {
	if t.running < a.cfg.HeavyTurns || !a.heavy(t) {
		return false
	}
	a.teamsMu.RLock()
	defer a.teamsMu.RUnlock()
	for _, o := range a.teams {
		if o != t && (o.running > 0 || now.UnixNano()-o.lastSeen.Load() < int64(otherTeamWindow)) {
			return true
		}
	}
	return false
}

// Len is how many requests wait; Running how many run.
func (a *Admission[J]) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queued
}

// Running is how many requests Next handed out that Done has not taken
// back.
func (a *Admission[J]) Running() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running
}

// Close wakes every waiting worker for good; Push refuses from then on.
func (a *Admission[J]) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.wake != nil {
		a.wake.Stop()
	}
	a.cond.Broadcast()
}
