package admission

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
)

// A heavy team's request waits at most MaxWait for its turn: past it,
// Next hands it out Expired (the owner refuses it) without a worker
// freeing, while a light team's request never waits.
func TestMaxWait(t *testing.T) {
	q := New[string](Config{MaxQueued: 100, HeavyTurns: 1, HeavyAfter: 10 * time.Millisecond, MaxWait: 50 * time.Millisecond})
	known(t, q, "heavy", 40*time.Millisecond)
	known(t, q, "light", time.Millisecond)
	push(t, q, "light", "l0")
	l0 := next(t, q) // the light team active
	push(t, q, "heavy", "h1")
	h1 := next(t, q)
	push(t, q, "heavy", "h2")
	start := time.Now()
	h2 := next(t, q) // waits for a turn that does not come, then expires
	if !h2.Expired || h2.Job != "h2" {
		t.Fatalf("got %+v, want h2 expired", h2)
	}
	if waited := time.Since(start); waited < 40*time.Millisecond || h2.Queued < 50*time.Millisecond {
		t.Errorf("expired after %s (queued %s), before MaxWait", waited, h2.Queued)
	}
	q.Done(h2, 0) // harmless for an expired request
	// The light team is never held back.
	for i := range 3 {
		push(t, q, "light", "l")
		if it := next(t, q); it.Expired || it.Job != "l" {
			t.Fatalf("light request %d: %+v", i, it)
		}
	}
	// A turn given back is taken by the next heavy request.
	push(t, q, "heavy", "h3")
	got := make(chan Item[string], 1)
	go func() {
		if it, ok := q.Next(); ok {
			got <- it
		}
	}()
	time.Sleep(10 * time.Millisecond)
	q.Done(h1, 40*time.Millisecond)
	select {
	case it := <-got:
		if it.Expired || it.Job != "h3" {
			t.Fatalf("got %+v, want h3 run", it)
		}
	case <-time.After(time.Second):
		t.Fatal("the next heavy request never ran")
	}
	q.Done(l0, time.Millisecond)

	// HeavyAfter <= 0: never heavy.
	never := New[string](Config{MaxQueued: 10, HeavyAfter: -1, NewTeamsHeavy: true})
	known(t, never, "heavy", time.Second)
	if never.heavy(never.Team("heavy")) || never.heavy(never.Team("new")) {
		t.Error("HeavyAfter -1 still marks a team heavy")
	}
	// Pushing, taking and giving back a request costs no allocation.
	light := q.Team("light")
	if n := testing.AllocsPerRun(100, func() {
		_ = q.Push(light, "x")
		it, _ := q.Next()
		q.Done(it, time.Millisecond)
	}); n != 0 {
		t.Errorf("a request through the queue allocates %v times", n)
	}
}

// A team over its searches in flight is refused naming the limit, and
// its slot comes back with Release.
func TestAdmitInFlight(t *testing.T) {
	a := New[string](Config{TeamInFlight: 2})
	now := time.Now()
	t1, err := a.Admit("alpha", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Admit("alpha", now); err != nil {
		t.Fatal(err)
	}
	_, err = a.Admit("alpha", now)
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeOverloaded || !strings.Contains(e.Message, "team alpha has 2 searches in flight on this broker, its limit (max_in_flight)") {
		t.Fatalf("a third search: %v", err)
	}
	if _, err := a.Admit("beta", now); err != nil {
		t.Fatalf("another team refused: %v", err)
	}
	a.Release(t1, time.Millisecond)
	if _, err := a.Admit("alpha", now); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	a.Apply("alpha", &api.TeamSettings{Name: "alpha", MaxInFlight: 5})
	if _, err := a.Admit("alpha", now); err != nil || t1.inFlight.Load() != 3 {
		t.Fatalf("under its own limit of 5: %v, %d in flight", err, t1.inFlight.Load())
	}
}

// Under a team's rate a search counts once per RateUnit of its time: a
// long search leaves the team in debt, refused until it is paid back,
// with a Retry-After that says when; a debt is bounded; with RateUnit
// negative every search counts once.
func TestRateCountsSearchTime(t *testing.T) {
	cfg := Config{TeamInFlight: 100, RateUnit: 50 * time.Millisecond}
	a := New[string](cfg)
	a.Apply("alpha", &api.TeamSettings{Name: "alpha", Rate: 10, Burst: 1})
	// search admits one of alpha's searches at now and ends it as if it
	// took took.
	search := func(now time.Time, took time.Duration) {
		t.Helper()
		st, err := a.Admit("alpha", now)
		if err != nil {
			t.Fatalf("admit at %s: %v", now.Format(time.StampMilli), err)
		}
		a.Release(st, took)
	}
	refusedFor := func(now time.Time) time.Duration {
		t.Helper()
		_, err := a.Admit("alpha", now)
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
	st := a.Team("alpha")
	if n := testing.AllocsPerRun(100, func() {
		st.limits.Load().bucket.take(time.Now())
		st.inFlight.Add(1)
		a.Release(st, time.Second)
	}); n != 0 {
		t.Errorf("a rate's take and charge allocate %v times", n)
	}
	// Over two brokers each takes half the rate, and says so.
	a.SetBrokers(2)
	a.Apply("beta", &api.TeamSettings{Name: "beta", Rate: 2, Burst: 2})
	if _, err := a.Admit("beta", later); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Admit("beta", later); err == nil || !strings.Contains(err.Error(), "(1 on each of 2 brokers)") {
		t.Fatalf("over half the rate on one of two brokers: %v", err)
	}

	// A rate set before the brokers changed is divided anew: 30/s, burst
	// 7 over 3 brokers is 10/s, burst 3 on each.
	a.Apply("gamma", &api.TeamSettings{Name: "gamma", Rate: 30, Burst: 7})
	a.SetBrokers(3)
	if l := a.Team("gamma").limits.Load(); l.bucket.rate != 10 || l.bucket.burst != 3 || l.brokers != 3 {
		t.Fatalf("30/s burst 7 over 3 brokers: %v/s burst %v", l.bucket.rate, l.bucket.burst)
	}

	// RateUnit negative: every search counts once.
	cfg.RateUnit = -1
	a = New[string](cfg)
	a.Apply("alpha", &api.TeamSettings{Name: "alpha", Rate: 10, Burst: 1})
	search(now, time.Second)
	search(now.Add(110*time.Millisecond), time.Second)
}
