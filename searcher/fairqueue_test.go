package searcher

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func jobFor(subj string) job { return job{msg: &nats.Msg{Subject: subj}, at: time.Now()} }

// known has team's first request served in took, so that the queue knows
// its cost (a team none of whose requests ended is held as heavy).
func known(t *testing.T, q *fairQueue, team string, took time.Duration) {
	t.Helper()
	q.push(team, jobFor(team+"-first"))
	j, tq, ok := q.next()
	if !ok || tq.name != team {
		t.Fatalf("the first request of %s: %v %+v", team, ok, tq)
	}
	q.done(tq, j, took)
}

// A team none of whose requests has ended yet is held as a heavy one's:
// its first request does not count as light (it gives way), and while it
// runs beside another team's, the team runs no second one; once one
// ended in little time, the team is light (issue 34: a new team's first
// search, a 2-second wildcard over every term, ran on every core).
func TestFairQueueNewTeamUntilKnown(t *testing.T) {
	q := newFairQueue(100, 4, 1, 25*time.Millisecond)
	known(t, q, "calm", time.Millisecond)
	q.push("calm", jobFor("c"))
	q.next() // the calm team active
	q.push("new", jobFor("n1"))
	q.push("new", jobFor("n2"))
	first, n, _ := q.next()
	if first.light {
		t.Fatal("a new team's first request counted as light")
	}
	got := make(chan string, 1)
	go func() { j, _, _ := q.next(); got <- j.msg.Subject }()
	select {
	case s := <-got:
		t.Fatalf("the new team ran a second request beside its first: %s", s)
	case <-time.After(50 * time.Millisecond):
	}
	q.done(n, first, 2*time.Millisecond) // light after all
	select {
	case s := <-got:
		if s != "n2" {
			t.Fatalf("got %s", s)
		}
	case <-time.After(time.Second):
		t.Fatal("the new team never ran its second request")
	}
	q.push("new", jobFor("n3"))
	if j, _, _ := q.next(); !j.light {
		t.Fatal("a team known to be light: its request not counted as light")
	}
}

// Waiting requests are served round-robin between teams, FIFO within one.
func TestFairQueueRoundRobin(t *testing.T) {
	q := newFairQueue(100, 8, 1, 25*time.Millisecond)
	known(t, q, "a", time.Millisecond)
	known(t, q, "b", time.Millisecond)
	for i := range 4 {
		q.push("a", jobFor("a"+string(rune('0'+i))))
	}
	q.push("b", jobFor("b0"))
	q.push("b", jobFor("b1"))
	var got []string
	for range 6 {
		j, _, ok := q.next()
		if !ok {
			t.Fatal("closed")
		}
		got = append(got, j.msg.Subject)
	}
	want := []string{"a0", "b0", "a1", "b1", "a2", "a3"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if q.len() != 0 {
		t.Fatalf("%d left", q.len())
	}
	if q.push("c", jobFor("c")); q.len() != 1 {
		t.Fatal("push")
	}
	full := newFairQueue(1, 1, 1, 0)
	if !full.push("a", jobFor("x")) || full.push("b", jobFor("y")) {
		t.Fatal("a full queue must refuse")
	}
}

// A team whose requests are slow runs at most heavyCap at once while
// another team is active; alone, it may use every worker.
func TestFairQueueHeavyCap(t *testing.T) {
	q := newFairQueue(100, 4, 1, 25*time.Millisecond)
	q.push("heavy", jobFor("h"))
	first, h, _ := q.next()
	q.done(h, first, 200*time.Millisecond) // heavy now
	for range 3 {
		q.push("heavy", jobFor("h"))
	}
	// Alone: it runs as many as there are workers.
	for range 2 {
		if _, _, ok := q.next(); !ok {
			t.Fatal("closed")
		}
	}
	// Another team shows up: the heavy one is held to 1 running (it has
	// 2), so the calm request goes first even though it came last.
	known(t, q, "calm", time.Millisecond)
	q.push("calm", jobFor("c"))
	j, _, _ := q.next()
	if j.msg.Subject != "c" {
		t.Fatalf("got %s, want the calm team's request", j.msg.Subject)
	}
	got := make(chan string, 1)
	go func() { j, _, _ := q.next(); got <- j.msg.Subject }()
	select {
	case s := <-got:
		t.Fatalf("the heavy team ran a third request at once: %s", s)
	case <-time.After(50 * time.Millisecond):
	}
	q.done(h, job{}, 200*time.Millisecond)
	q.done(h, job{}, 200*time.Millisecond) // back to 0 running: one may start
	select {
	case s := <-got:
		if s != "h" {
			t.Fatalf("got %s", s)
		}
	case <-time.After(time.Second):
		t.Fatal("the heavy team never ran again")
	}
	q.close()
	if _, _, ok := q.next(); ok {
		t.Fatal("next after close")
	}
}

// A heavy team's running request gives way at its checkpoints while a
// light team's request is queued or running: it waits until that request
// is done, at most heavyWaitOnce a checkpoint and its budget in all, and
// not at all when no light request is there.
func TestHeavyTurnGivesWay(t *testing.T) {
	q := newFairQueue(100, 4, 1, 25*time.Millisecond)
	q.push("heavy", jobFor("h"))
	first, h, _ := q.next()
	q.done(h, first, 200*time.Millisecond) // heavy now
	q.push("heavy", jobFor("h"))
	hj, _, _ := q.next()
	if hj.light {
		t.Fatal("a heavy team's request counted as light")
	}
	turn := &heavyTurn{q: q, left: time.Second}
	ctx := context.Background()

	start := time.Now() // nothing light: no wait
	if err := turn.checkpoint(ctx); err != nil || time.Since(start) > time.Millisecond || turn.waited != 0 {
		t.Fatalf("waited %s (%v) with no light request", time.Since(start), err)
	}

	known(t, q, "calm", time.Millisecond)
	q.push("calm", jobFor("c"))
	cj, c, _ := q.next()
	if !cj.light {
		t.Fatal("a light team's request not counted as light")
	}
	released := make(chan error, 1)
	go func() {
		var err error
		for range 100 { // 100 checkpoints of heavyWaitOnce would be 200ms
			if err = turn.checkpoint(ctx); err != nil {
				break
			}
		}
		released <- err
	}()
	// The exposure time: the light request runs 20 ms (ten of the heavy
	// one's waits), and the heavy one must give way all along.
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-released:
		t.Fatalf("the heavy request went on while a light one ran (%v)", err)
	default:
	}
	q.done(c, cj, time.Millisecond)
	select {
	case err := <-released:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Second):
		t.Fatal("the heavy request still waits after the light one is done")
	}
	if turn.waited < 10*time.Millisecond {
		t.Fatalf("waited %s in all, want about 20ms", turn.waited)
	}

	// A light team that never stops: the budget bounds the waits.
	q.push("calm", jobFor("c"))
	cj, c, _ = q.next()
	short := &heavyTurn{q: q, left: 10 * time.Millisecond}
	start = time.Now()
	for range 100 {
		if err := short.checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 200*time.Millisecond || short.left > 0 {
		t.Fatalf("100 checkpoints took %s with a 10ms budget (left %s)", took, short.left)
	}
	// And the request's end stops a wait.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := turn.checkpoint(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request's checkpoint: %v", err)
	}
	q.done(c, cj, time.Millisecond)
	if q.light.Load() != 0 {
		t.Fatalf("%d light requests counted, want 0", q.light.Load())
	}

	// Just after a light request is done, a heavy one lingers for what is
	// left of HeavyLinger, within its budget, and not once it has passed.
	// (A light request done just now, so that a slow machine's pause
	// before the checkpoint does not eat the linger.)
	q.push("calm", jobFor("c"))
	cj, c, _ = q.next()
	q.done(c, cj, time.Millisecond)
	lingering := &heavyTurn{q: q, left: time.Second, linger: 100 * time.Millisecond}
	start = time.Now()
	if err := lingering.checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 50*time.Millisecond || took > 900*time.Millisecond {
		t.Fatalf("lingered %s after a light request, want about 100ms", took)
	}
	start = time.Now()
	if err := lingering.checkpoint(ctx); err != nil || time.Since(start) > 5*time.Millisecond {
		t.Fatalf("lingered %s (%v) once the linger had passed", time.Since(start), err)
	}
	q.push("calm", jobFor("c"))
	cj, c, _ = q.next()
	q.done(c, cj, time.Millisecond)
	budget := &heavyTurn{q: q, left: 5 * time.Millisecond, linger: time.Hour}
	for range 10 {
		if err := budget.checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if budget.left > 0 || budget.waited > 100*time.Millisecond {
		t.Fatalf("lingered %s with a 5ms budget (left %s)", budget.waited, budget.left)
	}
	if err := (&heavyTurn{q: q, left: time.Hour, linger: time.Hour}).checkpoint(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request's linger: %v", err)
	}
}
