package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
)

// teamLimits admits each team's searches on this broker: at most its
// share of its rate (a searchBucket: the rate over the brokers up, see
// peers; a search counts once per Config.RateUnit of its time) and at
// most its in-flight cap at once, from the quarry-teams bucket
// (api.TeamSettings), with the broker's defaults for what a team does not
// set. A team over either gets 429 overloaded at once, naming the limit,
// and the other teams are not touched.
//
// Admitted, a heavy team's search waits for its turn (see
// Config.HeavyAfter): the searches of heavy teams share HeavySearches
// turns while another team is active.
type teamLimits struct {
	defaultInFlight int
	heavyAfter      time.Duration
	heavyWait       time.Duration
	rateUnit        time.Duration // <= 0: a search counts once
	turns           chan struct{} // the heavy teams' turns
	brokers         atomic.Int32  // brokers up, this one included: the rate's divisor
	// applyMu orders the writers of teams' limits (apply, setBrokers),
	// so that a change of settings and one of brokers do not undo each
	// other.
	applyMu sync.Mutex

	mu    sync.RWMutex
	teams map[string]*teamState
}

// teamState is one team's admission state: its in-flight count, and its
// limits, swapped whole when its settings change (searches running keep
// counting against the same count).
type teamState struct {
	name     string
	inFlight atomic.Int32
	limits   atomic.Pointer[teamConfig]
	costNS   atomic.Int64 // moving mean of its recent searches' time
	lastSeen atomic.Int64 // when its last search started, in Unix ns
	// memory is what its searches in flight hold on this broker, in
	// bytes (run.account), at most Config.TeamMaxSearchMemory.
	memory atomic.Int64
}

// teamConfig is a team's limits as the broker applies them.
type teamConfig struct {
	settings    api.TeamSettings
	limiter     *searchBucket // nil: no rate cap; else settings.Rate / brokers
	brokers     int           // brokers up when the limiter was made
	maxInFlight int32
}

func newTeamLimits(cfg *Config) *teamLimits {
	t := &teamLimits{defaultInFlight: cfg.TeamMaxInFlight, heavyAfter: cfg.HeavyAfter, heavyWait: cfg.HeavyWait, rateUnit: cfg.RateUnit,
		turns: make(chan struct{}, cfg.HeavySearches), teams: map[string]*teamState{}}
	t.brokers.Store(1)
	return t
}

// setBrokers divides every team's rate over n brokers from now on.
func (t *teamLimits) setBrokers(n int) {
	t.applyMu.Lock() // not between apply's read and write of a team
	defer t.applyMu.Unlock()
	t.brokers.Store(int32(max(1, n)))
	t.mu.RLock()
	defer t.mu.RUnlock()
	for name, st := range t.teams {
		s := st.limits.Load().settings
		st.limits.Store(t.config(name, &s))
	}
}

// state returns team's state, making it with the defaults if the team is
// new to the broker.
func (t *teamLimits) state(team string) *teamState {
	t.mu.RLock()
	st := t.teams[team]
	t.mu.RUnlock()
	if st != nil {
		return st
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if st = t.teams[team]; st == nil {
		st = &teamState{name: team}
		st.limits.Store(t.config(team, nil))
		t.teams[team] = st
	}
	return st
}

// config turns settings (nil: none) into the limits the broker applies.
func (t *teamLimits) config(team string, s *api.TeamSettings) *teamConfig {
	c := &teamConfig{settings: api.TeamSettings{Name: team}, maxInFlight: int32(t.defaultInFlight)}
	if s == nil {
		return c
	}
	c.settings = *s
	if s.MaxInFlight > 0 {
		c.maxInFlight = int32(s.MaxInFlight)
	}
	if s.Rate > 0 {
		burst := s.Burst
		if burst <= 0 {
			burst = max(1, int(math.Ceil(s.Rate)))
		}
		n := float64(t.brokers.Load())
		c.brokers = int(n)
		c.limiter = newSearchBucket(s.Rate/n, max(1, int(math.Ceil(float64(burst)/n))))
	}
	return c
}

// admit takes one of team's in-flight slots and a token of its rate, or
// says which limit refused it (with the wait a retry needs). The caller
// gives the slot back with st.inFlight.Add(-1). It does not allocate when
// it admits.
func (t *teamLimits) admit(team string, now time.Time) (*teamState, error) {
	st := t.state(team)
	c := st.limits.Load()
	if n := st.inFlight.Add(1); n > c.maxInFlight {
		st.inFlight.Add(-1)
		return nil, &api.Error{Code: api.CodeOverloaded, RetryAfterMS: 100,
			Message: fmt.Sprintf("team %s has %d searches in flight on this broker, its limit (max_in_flight); try again", team, c.maxInFlight)}
	}
	if c.limiter == nil {
		return st, nil
	}
	if wait, ok := c.limiter.take(now); !ok {
		st.inFlight.Add(-1)
		share := ""
		if c.brokers > 1 {
			share = fmt.Sprintf(" (%g on each of %d brokers)", c.settings.Rate/float64(c.brokers), c.brokers)
		}
		unit := ""
		if t.rateUnit > 0 {
			unit = fmt.Sprintf(", a search counting once per %s of its time", t.rateUnit)
		}
		wait = (wait + time.Millisecond - 1).Truncate(time.Millisecond) // up: a retry must not be early
		return nil, &api.Error{Code: api.CodeOverloaded, RetryAfterMS: int(wait.Milliseconds()),
			Message: fmt.Sprintf("team %s is over its rate limit of %g searches/s%s%s; retry after %s", team, c.settings.Rate, share, unit, wait)}
	}
	return st, nil
}

// otherTeamWindow is how recently another team must have started a
// search for a heavy team to wait for its turn.
const otherTeamWindow = time.Second

// A turn is one search's hold on its team's admission state, from when
// it may start to its reply: end it then.
type turn struct {
	limits *teamLimits
	st     *teamState
	heavy  bool // it holds one of the heavy teams' turns
}

// turn waits, if st's team is heavy and another team is active, for one
// of the heavy teams' turns. Past Config.HeavyWait it refuses the search as overloaded. It does not
// allocate unless it refuses.
func (t *teamLimits) turn(st *teamState) (turn, error) {
	now := time.Now()
	st.lastSeen.Store(now.UnixNano())
	heavy := t.heavy(st, now)
	if heavy {
		timer := time.NewTimer(t.heavyWait)
		defer timer.Stop()
		select {
		case t.turns <- struct{}{}:
		case <-timer.C:
			return turn{}, &api.Error{Code: api.CodeOverloaded, RetryAfterMS: int(t.heavyWait.Milliseconds()),
				Message: fmt.Sprintf("team %s's searches cost %s of searcher and plugin time on average (heavy) and waited %s for a turn while other teams search; try again",
					st.name, time.Duration(st.costNS.Load()).Round(time.Millisecond), t.heavyWait)}
		}
	}
	return turn{limits: t, st: st, heavy: heavy}, nil
}

// end adds the search's cost (its own work: shards' search time and
// plugin calls, not its latency, which other teams' load stretches) to its
// team's mean, charges the team's rate for it (Config.RateUnit), and
// gives its turn back.
func (tr turn) end(took time.Duration) {
	now := time.Now()
	tr.st.observe(took)
	if unit := tr.limits.rateUnit; unit > 0 {
		if b := tr.st.limits.Load().limiter; b != nil && took > unit {
			// One count was taken at admission.
			b.charge(now, math.Ceil(float64(took)/float64(unit))-1)
		}
	}
	if tr.heavy {
		<-tr.limits.turns
	}
}

// heavy reports whether st's recent searches are heavy while another team
// has started one within otherTeamWindow.
func (t *teamLimits) heavy(st *teamState, now time.Time) bool {
	if t.heavyAfter < 0 || time.Duration(st.costNS.Load()) <= t.heavyAfter {
		return false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, o := range t.teams {
		if o != st && now.UnixNano()-o.lastSeen.Load() < int64(otherTeamWindow) {
			return true
		}
	}
	return false
}

// observe adds a search's time to the team's moving mean (weight 1/8).
func (st *teamState) observe(took time.Duration) {
	for {
		old := st.costNS.Load()
		mean := int64(took)
		if old != 0 {
			mean = old + (int64(took)-old)/8
		}
		if st.costNS.CompareAndSwap(old, mean) {
			return
		}
	}
}

// searchBucket is a team's rate on this broker: a token bucket of burst
// tokens gaining rate a second. A search takes a token to start (take)
// and, once done, pays what else it cost (charge), which may leave the
// bucket in debt, down to maxRateDebt's worth of tokens: the team's
// next searches are refused until the debt is paid back. It is safe for
// concurrent use and does not allocate. (golang.org/x/time/rate's
// Limiter cannot be charged more than its burst at once, nor bound a
// debt, nor say how long until its next token without a reservation.)
type searchBucket struct {
	rate, burst float64
	mu          sync.Mutex
	tokens      float64
	last        time.Time // when tokens was last brought up to date
}

// maxRateDebt bounds a team's debt: one search charged for more than
// this at its team's rate (a long search at a low rate) does not lock the
// team out for longer.
const maxRateDebt = time.Minute

func newSearchBucket(rate float64, burst int) *searchBucket {
	return &searchBucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

// refill adds the tokens gained since b.last. The caller holds b.mu.
func (b *searchBucket) refill(now time.Time) {
	if now.After(b.last) {
		if !b.last.IsZero() {
			b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		}
		b.last = now
	}
}

// take takes a token at now, or reports how long until there is one.
func (b *searchBucket) take(now time.Time) (wait time.Duration, ok bool) {
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
func (b *searchBucket) charge(now time.Time, n float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.tokens = max(b.tokens-n, -b.rate*maxRateDebt.Seconds())
}

// apply installs a team's settings (nil: back to the defaults).
func (t *teamLimits) apply(team string, s *api.TeamSettings) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.state(team).limits.Store(t.config(team, s))
}

// decodeTeam decodes a team's stored settings.
func decodeTeam(raw []byte) (*api.TeamSettings, error) {
	var s api.TeamSettings
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return &s, s.Validate()
}

// watchTeams applies every change of the quarry-teams bucket until ctx is
// done.
func (b *Broker) watchTeams(ctx context.Context) error {
	w, err := b.store.Follow(ctx, b.store.Teams, false)
	if err != nil {
		return fmt.Errorf("broker: watch teams: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return meta.WatchEnded(ctx, "broker: team")
			}
			if e == nil {
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				b.teamLimits.apply(e.Key(), nil)
				continue
			}
			s, err := decodeTeam(e.Value())
			if err != nil {
				// The broker's defaults, as for a team with no settings:
				// keeping the team's last valid limits would leave a
				// broker started since with other limits than this one.
				b.cfg.Logger.Warn("team settings ignored: the broker's defaults hold", "team", e.Key(), "err", err)
				b.teamLimits.apply(e.Key(), nil)
				continue
			}
			b.teamLimits.apply(e.Key(), s)
			b.cfg.Logger.Info("team limits", "team", e.Key(), "rate", s.Rate, "burst", s.Burst, "max_in_flight", s.MaxInFlight)
		}
	}
}
