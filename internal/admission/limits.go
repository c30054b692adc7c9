package admission

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quarrysearch/quarry/api"
)

// Team is one team's admission state: its requests in flight, its mean
// cost, when it last came, and its limits, swapped whole when its
// settings change (requests running keep counting against the same
// count).
type Team struct {
	name     string
	inFlight atomic.Int32
	limits   atomic.Pointer[teamLimits]
	cost     atomic.Int64 // moving mean of its recent requests' cost, ns
	known    atomic.Bool  // one of its requests ended: cost means something
	lastSeen atomic.Int64 // when its last request came, Unix ns
	running  int          // requests Next handed out (under Admission.mu)

	// Memory is what the owner accounts to the team's requests in flight,
	// in bytes (the broker: its searches' memory, bounded by
	// --team-max-search-memory).
	Memory atomic.Int64
}

// Name is the team's name.
func (t *Team) Name() string { return t.name }

// Cost is the mean cost of the team's recent requests.
func (t *Team) Cost() time.Duration { return time.Duration(t.cost.Load()) }

// observe adds a request's cost to the team's moving mean (weight 1/8;
// the first sets it).
func (t *Team) observe(cost time.Duration) {
	for {
		old := t.cost.Load()
		mean := int64(cost)
		if t.known.Load() {
			mean = old + (int64(cost)-old)/8
		}
		if t.cost.CompareAndSwap(old, mean) {
			t.known.Store(true)
			return
		}
	}
}

// teamLimits is a team's limits as applied.
type teamLimits struct {
	settings    api.TeamSettings
	bucket      *bucket // nil: no rate cap; else settings.Rate / brokers
	brokers     int     // brokers up when the bucket was made
	maxInFlight int32   // 0: no cap
}

// Team returns team's state, making it with the defaults if the team is
// new.
func (a *Admission[J]) Team(team string) *Team {
	a.teamsMu.RLock()
	t := a.teams[team]
	a.teamsMu.RUnlock()
	if t != nil {
		return t
	}
	a.teamsMu.Lock()
	defer a.teamsMu.Unlock()
	t = a.teams[team]
	if t == nil {
		t = &Team{name: team}
		t.limits.Store(a.limitsFor(team, nil))
		a.teams[team] = t
	}
	return t
}

// Teams calls f for every team known.
func (a *Admission[J]) Teams(f func(*Team)) {
	a.teamsMu.RLock()
	teams := make([]*Team, 0, len(a.teams))
	for _, t := range a.teams {
		teams = append(teams, t)
	}
	a.teamsMu.RUnlock()
	for _, t := range teams {
		f(t)
	}
}

// Admit takes one of team's in-flight slots and a token of its rate, or
// returns the *api.Error (overloaded) naming the limit that refused it,
// with the wait a retry needs. Release gives the slot back. It does not
// allocate when it admits.
func (a *Admission[J]) Admit(team string, now time.Time) (*Team, error) {
	t := a.Team(team)
	l := t.limits.Load()
	if n := t.inFlight.Add(1); l.maxInFlight > 0 && n > l.maxInFlight {
		t.inFlight.Add(-1)
		return nil, &api.Error{Code: api.CodeOverloaded, RetryAfterMS: 100,
			Message: fmt.Sprintf("team %s has %d searches in flight on this broker, its limit (max_in_flight); try again", team, l.maxInFlight)}
	}
	if l.bucket == nil {
		return t, nil
	}
	if wait, ok := l.bucket.take(now); !ok {
		t.inFlight.Add(-1)
		share := ""
		if l.brokers > 1 {
			share = fmt.Sprintf(" (%g on each of %d brokers)", l.settings.Rate/float64(l.brokers), l.brokers)
		}
		unit := ""
		if a.cfg.RateUnit > 0 {
			unit = fmt.Sprintf(", a search counting once per %s of its time", a.cfg.RateUnit)
		}
		wait = (wait + time.Millisecond - 1).Truncate(time.Millisecond) // up: a retry must not be early
		return nil, &api.Error{Code: api.CodeOverloaded, RetryAfterMS: int(wait.Milliseconds()),
			Message: fmt.Sprintf("team %s is over its rate limit of %g searches/s%s%s; retry after %s", team, l.settings.Rate, share, unit, wait)}
	}
	return t, nil
}

// Release gives back the in-flight slot Admit took for one of t's
// requests, and charges t's rate for what else it cost: it counts once
// per Config.RateUnit of cost begun, one count taken by Admit.
func (a *Admission[J]) Release(t *Team, cost time.Duration) {
	t.inFlight.Add(-1)
	if unit := a.cfg.RateUnit; unit > 0 && cost > unit {
		if b := t.limits.Load().bucket; b != nil {
			b.charge(time.Now(), math.Ceil(float64(cost)/float64(unit))-1)
		}
	}
}

// Apply installs a team's settings (nil: back to the defaults).
func (a *Admission[J]) Apply(team string, s *api.TeamSettings) {
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	t := a.Team(team)
	t.limits.Store(a.limitsFor(team, s))
}

// SetBrokers divides every team's rate over n brokers from now on.
func (a *Admission[J]) SetBrokers(n int) {
	a.applyMu.Lock() // not between Apply's read and write of a team
	defer a.applyMu.Unlock()
	a.brokers.Store(int32(max(1, n)))
	a.Teams(func(t *Team) {
		s := t.limits.Load().settings
		t.limits.Store(a.limitsFor(t.name, &s))
	})
}

// limitsFor turns settings (nil: none) into the limits applied.
func (a *Admission[J]) limitsFor(team string, s *api.TeamSettings) *teamLimits {
	l := &teamLimits{settings: api.TeamSettings{Name: team}, maxInFlight: int32(a.cfg.TeamInFlight)}
	if s == nil {
		return l
	}
	l.settings = *s
	if s.MaxInFlight > 0 {
		l.maxInFlight = int32(s.MaxInFlight)
	}
	if s.Rate > 0 {
		burst := s.Burst
		if burst <= 0 {
			burst = max(1, int(math.Ceil(s.Rate)))
		}
		n := float64(a.brokers.Load())
		l.brokers = int(n)
		l.bucket = newBucket(s.Rate/n, max(1, int(math.Ceil(float64(burst)/n))))
	}
	return l
}

// Limited reports whether t's settings give it a rate.
func (t *Team) Limited() bool { return t.limits.Load().bucket != nil }

// bucket is a team's rate: a token bucket of burst tokens gaining rate a
// second. A request takes a token to start (take) and, once done, pays
// what else it cost (charge), which may leave the bucket in debt, down to
// maxRateDebt's worth of tokens: the team's next requests are refused
// until the debt is paid back. It is safe for concurrent use and does not
// allocate. (golang.org/x/time/rate's Limiter cannot be charged more than
// its burst at once, nor bound a debt, nor say how long until its next
// token without a reservation.)
type bucket struct {
	rate, burst float64
	mu          sync.Mutex
	tokens      float64
	last        time.Time // when tokens was last brought up to date
}

// maxRateDebt bounds a team's debt: one request charged for more than
// this at its team's rate (a long search at a low rate) does not lock the
// team out for longer.
const maxRateDebt = time.Minute

// newBucket returns a full bucket.
func newBucket(rate float64, burst int) *bucket {
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

// refill adds the tokens gained since b.last. The caller holds b.mu.
func (b *bucket) refill(now time.Time) {
	if now.After(b.last) {
		if !b.last.IsZero() {
			b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		}
		b.last = now
	}
}

// take takes a token at now, or reports how long until there is one.
func (b *bucket) take(now time.Time) (wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second)), false
}

// charge takes n more tokens at now, into debt if need be.
func (b *bucket) charge(now time.Time, n float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.tokens = max(b.tokens-n, -b.rate*maxRateDebt.Seconds())
}
