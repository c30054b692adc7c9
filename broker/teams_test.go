package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
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
	t1.end()
	t2.end()
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
	if !errors.As(err, &e) || e.Code != api.CodeOverloaded || !strings.Contains(e.Message, "team heavy's searches take 40ms on average (heavy)") {
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
		defer tr.end()
	}
	// A turn given back is taken by the next heavy search.
	done := make(chan error, 1)
	go func() {
		tr, err := limits.turn(heavy)
		if err == nil {
			tr.end()
		}
		done <- err
	}()
	time.Sleep(5 * time.Millisecond)
	t1.end()
	if err := <-done; err != nil {
		t.Fatalf("the next heavy search after a turn was given back: %v", err)
	}
	tLight.end()

	// A search's turn costs no allocation (it runs for every search).
	if n := testing.AllocsPerRun(100, func() {
		tr, _ := limits.turn(light)
		tr.end()
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
