package plugins

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/testwait"
)

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
	if n, w := c.running.Load(), c.waiters.Load(); n != 0 || w != 0 || len(c.queue) != 0 {
		t.Fatalf("%d running, %d waiting (%d queued), want none", n, w, len(c.queue))
	}
}

// TestCallSlotsNoLostSlot: calls with a deadline far away always get a
// slot, however their waits and gives interleave: a slot given back as a
// call queues is handed to it, never left free while it sleeps.
func TestCallSlotsNoLostSlot(t *testing.T) {
	c := newCallSlots(1)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				if !c.take() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					ok := c.wait(ctx)
					cancel()
					if !ok {
						failed.Add(1)
						continue
					}
				}
				c.give()
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d calls waited 10 s for a slot", n)
	}
	if n, w := c.running.Load(), c.waiters.Load(); n != 0 || w != 0 {
		t.Fatalf("%d running, %d waiting, want none", n, w)
	}
}

// TestCallSlotsFIFO: a slot given back while calls wait goes to the one
// that waited longest, not to a new call that asks for it first (the
// first design let new calls take it, and a waiter could lose every
// time until its deadline); a call leaving the queue at its deadline
// takes no slot with it.
func TestCallSlotsFIFO(t *testing.T) {
	c := newCallSlots(1)
	if !c.take() {
		t.Fatal("no slot free at the start")
	}
	got := make(chan int, 2)
	for i := range 2 {
		go func() {
			if c.wait(context.Background()) {
				got <- i
			}
		}()
		testwait.Until(t, 5*time.Second, "the call queued", func() bool { return c.waiters.Load() == int64(i+1) })
	}
	c.give() // to the first waiter
	if c.take() {
		t.Fatal("a new call took the slot given back while two calls waited")
	}
	if first := <-got; first != 0 {
		t.Fatalf("waiter %d got the slot first", first)
	}
	c.give() // to the second
	if second := <-got; second != 1 {
		t.Fatalf("waiter %d got the slot second", second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if c.wait(ctx) {
		t.Fatal("a call took the slot the second waiter holds")
	}
	c.give()
	if n, w := c.running.Load(), c.waiters.Load(); n != 0 || w != 0 {
		t.Fatalf("%d running, %d waiting, want none", n, w)
	}
	if !c.take() {
		t.Fatal("no slot free at the end")
	}
}
