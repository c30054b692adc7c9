package admission

import (
	"context"
	"time"
)

// turnWaitOnce bounds one wait of a heavy request at a checkpoint: a
// light team that sends requests back to back never lets the count of
// its requests fall to 0, and the heavy request must still move on.
const turnWaitOnce = 2 * time.Millisecond

// Turn is a heavy team's running request giving way to the light teams'
// requests at its checkpoints (shard.Checkpoint), for at most a budget in
// all. It is used by the one goroutine serving the request.
type Turn struct {
	light  func() (n int64, done <-chan struct{}, last int64)
	left   time.Duration
	linger time.Duration
	waited time.Duration
}

// Turn returns the turn of a request that is not light (Item.Light), with
// budget left in all and linger after the last light request (0: none).
func (a *Admission[J]) Turn(left, linger time.Duration) *Turn {
	return &Turn{light: a.lightState, left: left, linger: linger}
}

// lightState is the light requests' count, the channel closed when it
// falls to 0, and when the last was done.
func (a *Admission[J]) lightState() (int64, <-chan struct{}, int64) {
	if a.light.Load() == 0 {
		return 0, nil, a.lightLast.Load()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.light.Load()
	if n > 0 && a.lightDone == nil {
		a.lightDone = make(chan struct{})
	}
	return n, a.lightDone, a.lightLast.Load()
}

// Waited is how long the request has waited at its checkpoints.
func (h *Turn) Waited() time.Duration { return h.waited }

// Checkpoint waits while light requests are queued or running, until they
// are done, turnWaitOnce has passed or the budget is spent, and after the
// last of them for what is left of the linger; it returns ctx's error if
// ctx ends first. Nothing to wait for costs an atomic load (and a clock
// read with a linger).
func (h *Turn) Checkpoint(ctx context.Context) error {
	if h.left <= 0 {
		return nil
	}
	n, ch, last := h.light()
	d := min(h.left, turnWaitOnce)
	if n == 0 {
		if h.linger <= 0 {
			return nil
		}
		since := time.Duration(time.Now().UnixNano() - last)
		if since >= h.linger {
			return nil
		}
		d = min(h.left, h.linger-since)
		ch = nil // lingering: only the timer ends the wait
	}
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	took := time.Since(start)
	h.left -= took
	h.waited += took
	return nil
}
