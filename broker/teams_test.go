package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// A heavy team takes turns only while another team is active, waits at
// most HeavyWait for one, and a light team never waits.
func TestHeavyTurns(t *testing.T) {
	cfg := Config{HeavyAfter: 10 * time.Millisecond, HeavySearches: 1, HeavyWait: 50 * time.Millisecond}
	limits := newTeamLimits(&cfg)
	heavy, light := limits.state("heavy"), limits.state("light")
	heavy.observe(40 * time.Millisecond)
	light.observe(time.Millisecond)

	// Alone, a heavy team is not held back: two searches at once.
	t1, err := limits.turn(heavy)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := limits.turn(heavy)
	if err != nil {
		t.Fatalf("a heavy team alone waited: %v", err)
	}
	t1.end(0)
	t2.end(0)
	heavy.costNS.Store(int64(40 * time.Millisecond))

	// Another team starts a search: the heavy team's searches take turns.
	tLight, err := limits.turn(light)
	if err != nil {
		t.Fatal(err)
	}
	t1, err = limits.turn(heavy)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = limits.turn(heavy)
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeOverloaded || !strings.Contains(e.Message, "team heavy's searches cost 40ms of searcher and plugin time on average (heavy)") {
		t.Fatalf("a second heavy search while another team is active: %v", err)
	}
	if waited := time.Since(start); waited < cfg.HeavyWait {
		t.Errorf("refused after %s, before HeavyWait %s", waited, cfg.HeavyWait)
	}
	// The light team is never held back.
	for range 3 {
		tr, err := limits.turn(light)
		if err != nil {
			t.Fatalf("the light team waited: %v", err)
		}
		defer tr.end(0)
	}
	// A turn given back is taken by the next heavy search, waiting for
	// it (it has asked for its turn: its team's last search start moved).
	asked := heavy.lastSeen.Load()
	done := make(chan error, 1)
	go func() {
		tr, err := limits.turn(heavy)
		if err == nil {
			tr.end(0)
		}
		done <- err
	}()
	testwait.Until(t, 5*time.Second, "the next heavy search asks for its turn", func() bool { return heavy.lastSeen.Load() != asked })
	t1.end(0)
	if err := <-done; err != nil {
		t.Fatalf("the next heavy search after a turn was given back: %v", err)
	}
	tLight.end(0)

	// A search's turn costs no allocation (it runs for every search).
	if n := testing.AllocsPerRun(100, func() {
		tr, _ := limits.turn(light)
		tr.end(0)
	}); n != 0 {
		t.Errorf("a turn allocates %v times", n)
	}

	// Negative HeavyAfter: never heavy.
	cfg.HeavyAfter = -1
	never := newTeamLimits(&cfg)
	h, l := never.state("heavy"), never.state("light")
	h.observe(time.Second)
	l.lastSeen.Store(time.Now().UnixNano())
	if never.heavy(h, time.Now()) {
		t.Error("HeavyAfter -1 still marks a team heavy")
	}
}

// Under a team's rate a search counts once per RateUnit of its time: a
// long search leaves the team in debt, refused until it is paid back,
// with a Retry-After that says when; a debt is bounded; with RateUnit
// negative every search counts once.
func TestRateCountsSearchTime(t *testing.T) {
	cfg := Defaults
	cfg.EnsureDefaults()
	cfg.RateUnit = 50 * time.Millisecond
	limits := newTeamLimits(&cfg)
	limits.apply("alpha", &api.TeamSettings{Name: "alpha", Rate: 10, Burst: 1})
	// search admits one of alpha's searches at now and ends it as if it
	// took took.
	search := func(now time.Time, took time.Duration) {
		t.Helper()
		st, err := limits.admit("alpha", now)
		if err != nil {
			t.Fatalf("admit at %s: %v", now.Format(time.StampMilli), err)
		}
		st.inFlight.Add(-1)
		turn{limits: limits, st: st}.end(took)
	}
	refusedFor := func(now time.Time) time.Duration {
		t.Helper()
		_, err := limits.admit("alpha", now)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.CodeOverloaded {
			t.Fatalf("admit at %s: %v, want overloaded", now.Format(time.StampMilli), err)
		}
		if !strings.Contains(e.Message, "team alpha is over its rate limit of 10 searches/s, a search counting once per 50ms of its time; retry after") {
			t.Errorf("message: %q", e.Message)
		}
		return time.Duration(e.RetryAfterMS) * time.Millisecond
	}

	// 160ms counts 4 times: 1 to start, 3 more when done; at 10/s the
	// next one may start 400ms after the first.
	now := time.Now()
	search(now, 160*time.Millisecond)
	if wait := refusedFor(time.Now()); wait < 350*time.Millisecond || wait > 400*time.Millisecond {
		t.Errorf("Retry-After %s after a search of 160ms at 10/s, want about 400ms", wait)
	}
	refusedFor(now.Add(300 * time.Millisecond))
	search(now.Add(410*time.Millisecond), time.Millisecond) // paid back; a quick search counts once
	search(now.Add(520*time.Millisecond), time.Millisecond)

	// A search of an hour at 10/s: the debt stops at a minute's worth.
	later := now.Add(time.Second)
	search(later, time.Hour)
	if wait := refusedFor(later); wait < 59*time.Second || wait > maxRateDebt+time.Second {
		t.Errorf("Retry-After %s after a search of an hour, want at most %s", wait, maxRateDebt)
	}
	search(later.Add(maxRateDebt+200*time.Millisecond), time.Millisecond)

	// Admitting and charging a team with a rate costs no allocation.
	st := limits.state("alpha")
	if n := testing.AllocsPerRun(100, func() {
		st.limits.Load().limiter.take(time.Now())
		turn{limits: limits, st: st}.end(time.Second)
	}); n != 0 {
		t.Errorf("a rate's take and charge allocate %v times", n)
	}

	// RateUnit negative: every search counts once.
	cfg.RateUnit = -1
	limits = newTeamLimits(&cfg)
	limits.apply("alpha", &api.TeamSettings{Name: "alpha", Rate: 10, Burst: 1})
	search(now, time.Second)
	search(now.Add(110*time.Millisecond), time.Second)

}
