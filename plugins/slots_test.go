package plugins

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	if n, s := c.running.Load(), c.sleepers.Load(); n != 0 || s != 0 {
		t.Fatalf("%d running, %d sleeping, want none", n, s)
	}
}

// TestCallSlotsNoLostSlot: calls with a deadline far away always get a
// slot, however their waits and gives interleave: no slot is left free
// while a call sleeps for one.
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
	if n, s := c.running.Load(), c.sleepers.Load(); n != 0 || s != 0 {
		t.Fatalf("%d running, %d sleeping, want none", n, s)
	}
}
