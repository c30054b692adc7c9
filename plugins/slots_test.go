package plugins

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/testwait"
)

// TestCallSlotsInLine: with the team's calls all running, calls wait in
// line and get slots in the order they came; a call arriving meanwhile
// does not take a slot given back under them; a call whose deadline
// comes leaves the line, and the slots all come back.
func TestCallSlotsInLine(t *testing.T) {
	c := newCallSlots(1)
	if !c.take() {
		t.Fatal("the free slot was not taken")
	}
	got := make(chan int, 3)
	for i := range 3 {
		go func() {
			if c.wait(context.Background()) {
				got <- i
			}
		}()
		testwait.Until(t, 5*time.Second, "the call in line", func() bool { return c.sleepers.Load() == int64(i+1) })
	}
	late, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if c.wait(late) {
		t.Fatal("a call past its deadline got a slot")
	}
	for want := range 3 {
		c.give() // the holder's call ends
		if c.take() {
			t.Fatalf("a new call took the slot given back while %d waited", 3-want)
		}
		select {
		case i := <-got:
			if i != want {
				t.Fatalf("call %d got the slot, want call %d (in the order they came)", i, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no call got the slot given back (call %d waits)", want)
		}
	}
	c.give()
	if n, s := c.running.Load(), c.sleepers.Load(); n != 0 || s != 0 || len(c.line) != 0 {
		t.Fatalf("%d running, %d in line (%d), want none", n, s, len(c.line))
	}
	if !c.take() {
		t.Fatal("the slot was not free again")
	}
}

// TestCallSlotsUnderLoad: many calls taking, waiting (some past their
// deadlines) and giving back at once never run more than the cap, and
// leave every slot free.
func TestCallSlotsUnderLoad(t *testing.T) {
	c := newCallSlots(2)
	var over atomic.Bool
	var holding atomic.Int64 // calls holding a slot (running also counts a take's try for a moment)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 300 {
				ok := c.take()
				if !ok {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(g%4)*100*time.Microsecond)
					ok = c.wait(ctx)
					cancel()
				}
				if !ok {
					continue
				}
				if holding.Add(1) > c.max {
					over.Store(true)
				}
				if i%7 == 0 {
					time.Sleep(50 * time.Microsecond)
				}
				holding.Add(-1)
				c.give()
			}
		})
	}
	wg.Wait()
	if over.Load() {
		t.Error("more calls ran than the cap")
	}
	if n, s := c.running.Load(), c.sleepers.Load(); n != 0 || s != 0 || len(c.line) != 0 {
		t.Fatalf("%d running, %d in line (%d), want none", n, s, len(c.line))
	}
}
