package admission

import (
	"context"
	"errors"
	"testing"
	"time"
)

// known has team's first request served in took, so that the queue knows
// its cost (a team none of whose requests ended is held as heavy).
func known(t *testing.T, q *Admission[string], team string, took time.Duration) {
	t.Helper()
	push(t, q, team, team+"-first")
	it, ok := q.Next()
	if !ok || it.Team.Name() != team {
		t.Fatalf("the first request of %s: %v %+v", team, ok, it.Team)
	}
	q.Done(it, took)
}

// nextLater takes the next request on a goroutine of its own: the
// channel gets its job once Next hands one out.
func nextLater(q *Admission[string]) <-chan string {
	got := make(chan string, 1)
	go func() {
		if j, ok := q.Next(); ok {
			got <- j.Job
		}
	}()
	return got
}

// push queues job for team.
func push(t *testing.T, q *Admission[string], team, job string) {
	t.Helper()
	if err := q.Push(q.Team(team), job); err != nil {
		t.Fatalf("push %s: %v", job, err)
	}
}

// next takes the next request.
func next(t *testing.T, q *Admission[string]) Item[string] {
	t.Helper()
	it, ok := q.Next()
	if !ok {
		t.Fatal("closed")
	}
	return it
}

// A team none of whose requests has ended yet is held as a heavy one's:
// its first request does not count as light (it gives way), and while it
// runs beside another team's, the team runs no second one; once one
// ended in little time, the team is light (issue 34: a new team's first
// search, a 2-second wildcard over every term, ran on every core).
func TestFairQueueNewTeamUntilKnown(t *testing.T) {
	q := New[string](Config{MaxQueued: 100, HeavyTurns: 1, HeavyAfter: 25 * time.Millisecond, NewTeamsHeavy: true})
	known(t, q, "calm", time.Millisecond)
	push(t, q, "calm", "c")
	next(t, q) // the calm team active
	push(t, q, "new", "n1")
	push(t, q, "new", "n2")
	first := next(t, q)
	if first.Light {
		t.Fatal("a new team's first request counted as light")
	}
	got := nextLater(q)
	select {
	case s := <-got:
		t.Fatalf("the new team ran a second request beside its first: %s", s)
	case <-time.After(50 * time.Millisecond):
	}
	q.Done(first, 2*time.Millisecond) // light after all
	select {
	case s := <-got:
		if s != "n2" {
			t.Fatalf("got %s", s)
		}
	case <-time.After(time.Second):
		t.Fatal("the new team never ran its second request")
	}
	push(t, q, "new", "n3")
	if j := next(t, q); !j.Light {
		t.Fatal("a team known to be light: its request not counted as light")
	}
}

// Waiting requests are served round-robin between teams, FIFO within one.
func TestFairQueueRoundRobin(t *testing.T) {
	q := New[string](Config{MaxQueued: 100, HeavyTurns: 1, HeavyAfter: 25 * time.Millisecond, NewTeamsHeavy: true})
	known(t, q, "a", time.Millisecond)
	known(t, q, "b", time.Millisecond)
	for i := range 4 {
		push(t, q, "a", "a"+string(rune('0'+i)))
	}
	push(t, q, "b", "b0")
	push(t, q, "b", "b1")
	var got []string
	for range 6 {
		got = append(got, next(t, q).Job)
	}
	want := []string{"a0", "b0", "a1", "b1", "a2", "a3"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	if q.Len() != 0 {
		t.Fatalf("%d left", q.Len())
	}
	if push(t, q, "c", "c"); q.Len() != 1 {
		t.Fatal("push")
	}
	full := New[string](Config{MaxQueued: 1})
	if err := full.Push(full.Team("a"), "x"); err != nil {
		t.Fatal(err)
	}
	if err := full.Push(full.Team("b"), "y"); !errors.Is(err, ErrFull) {
		t.Fatalf("a full queue's push: %v, want ErrFull", err)
	}
	// MaxHeld counts the running with the waiting.
	held := New[string](Config{MaxQueued: 10, MaxHeld: 2})
	for _, job := range []string{"x", "y"} {
		push(t, held, "a", job)
	}
	running := next(t, held)
	if err := held.Push(held.Team("b"), "z"); !errors.Is(err, ErrFull) {
		t.Fatalf("a push with one running and one waiting under MaxHeld 2: %v, want ErrFull", err)
	}
	held.Done(running, time.Millisecond)
	push(t, held, "b", "z")
}

// A team whose requests are slow runs at most heavyCap at once while
// another team is active; alone, it may use every worker.
func TestFairQueueHeavyCap(t *testing.T) {
	q := New[string](Config{MaxQueued: 100, HeavyTurns: 1, HeavyAfter: 25 * time.Millisecond, NewTeamsHeavy: true})
	push(t, q, "heavy", "h")
	first := next(t, q)
	q.Done(first, 200*time.Millisecond) // heavy now
	for range 3 {
		push(t, q, "heavy", "h")
	}
	// Alone: it runs as many as there are workers.
	h1, h2 := next(t, q), next(t, q)
	// Another team shows up: the heavy one is held to 1 running (it has
	// 2), so the calm request goes first even though it came last.
	known(t, q, "calm", time.Millisecond)
	push(t, q, "calm", "c")
	j := next(t, q)
	if j.Job != "c" {
		t.Fatalf("got %s, want the calm team's request", j.Job)
	}
	got := nextLater(q)
	select {
	case s := <-got:
		t.Fatalf("the heavy team ran a third request at once: %s", s)
	case <-time.After(50 * time.Millisecond):
	}
	q.Done(h1, 200*time.Millisecond)
	q.Done(h2, 200*time.Millisecond) // back to 0 running: one may start
	select {
	case s := <-got:
		if s != "h" {
			t.Fatalf("got %s", s)
		}
	case <-time.After(time.Second):
		t.Fatal("the heavy team never ran again")
	}
	q.Close()
	if _, ok := q.Next(); ok {
		t.Fatal("next after close")
	}
}

// A heavy team's running request gives way at its checkpoints while a
// light team's request is queued or running: it waits until that request
// is done, at most heavyWaitOnce a checkpoint and its budget in all, and
// not at all when no light request is there.
func TestHeavyTurnGivesWay(t *testing.T) {
	q := New[string](Config{MaxQueued: 100, HeavyTurns: 1, HeavyAfter: 25 * time.Millisecond, NewTeamsHeavy: true})
	push(t, q, "heavy", "h")
	first := next(t, q)
	q.Done(first, 200*time.Millisecond) // heavy now
	push(t, q, "heavy", "h")
	hj := next(t, q)
	if hj.Light {
		t.Fatal("a heavy team's request counted as light")
	}
	turn := q.Turn(time.Second, 0)
	ctx := context.Background()

	start := time.Now() // nothing light: no wait
	if err := turn.Checkpoint(ctx); err != nil || time.Since(start) > time.Millisecond || turn.waited != 0 {
		t.Fatalf("waited %s (%v) with no light request", time.Since(start), err)
	}

	known(t, q, "calm", time.Millisecond)
	push(t, q, "calm", "c")
	cj := next(t, q)
	if !cj.Light {
		t.Fatal("a light team's request not counted as light")
	}
	released := make(chan error, 1)
	go func() {
		var err error
		for range 100 { // 100 checkpoints of heavyWaitOnce would be 200ms
			if err = turn.Checkpoint(ctx); err != nil {
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
	q.Done(cj, time.Millisecond)
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
	push(t, q, "calm", "c")
	cj = next(t, q)
	short := q.Turn(10*time.Millisecond, 0)
	start = time.Now()
	for range 100 {
		if err := short.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 200*time.Millisecond || short.left > 0 {
		t.Fatalf("100 checkpoints took %s with a 10ms budget (left %s)", took, short.left)
	}
	// And the request's end stops a wait.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := turn.Checkpoint(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request's checkpoint: %v", err)
	}
	q.Done(cj, time.Millisecond)
	if q.light.Load() != 0 {
		t.Fatalf("%d light requests counted, want 0", q.light.Load())
	}

	// Just after a light request is done, a heavy one lingers for what is
	// left of HeavyLinger, within its budget, and not once it has passed.
	// (A light request done just now, so that a slow machine's pause
	// before the checkpoint does not eat the linger.)
	push(t, q, "calm", "c")
	cj = next(t, q)
	q.Done(cj, time.Millisecond)
	lingering := q.Turn(time.Second, 100*time.Millisecond)
	start = time.Now()
	if err := lingering.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 50*time.Millisecond || took > 900*time.Millisecond {
		t.Fatalf("lingered %s after a light request, want about 100ms", took)
	}
	start = time.Now()
	if err := lingering.Checkpoint(ctx); err != nil || time.Since(start) > 5*time.Millisecond {
		t.Fatalf("lingered %s (%v) once the linger had passed", time.Since(start), err)
	}
	push(t, q, "calm", "c")
	cj = next(t, q)
	q.Done(cj, time.Millisecond)
	budget := q.Turn(5*time.Millisecond, time.Hour)
	for range 10 {
		if err := budget.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if budget.left > 0 || budget.waited > 100*time.Millisecond {
		t.Fatalf("lingered %s with a 5ms budget (left %s)", budget.waited, budget.left)
	}
	if err := q.Turn(time.Hour, time.Hour).Checkpoint(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled request's linger: %v", err)
	}
}

// BenchmarkQueue is one request's way through: admitted, pushed, taken
// and given back, as the broker does for each search.
func BenchmarkQueue(b *testing.B) {
	q := New[string](Config{MaxQueued: 100, HeavyAfter: 25 * time.Millisecond, TeamInFlight: 10})
	b.ReportAllocs()
	for b.Loop() {
		t, err := q.Admit("alpha", time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Push(t, "x"); err != nil {
			b.Fatal(err)
		}
		it, _ := q.Next()
		q.Done(it, time.Millisecond)
		q.Release(t, time.Millisecond)
	}
}
