package node

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// The fault suite (fault_*_test.go) runs short variants by default, for
// CI; the soak variants (testtier.Soak) run more queries and longer loads
// and hold the tight bounds of issue 6:
//
//	go test -tags long,soak ./node -run 'Fault' -v

// waitUntil is testwait.Until: it polls cond until it holds, or fails the
// test after timeout saying what it waited for, and returns how long it
// took.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return testwait.Until(t, timeout, what, cond)
}

// within logs how long after a fault at since something came true, and
// fails the test if that was later than bound.
func within(t testing.TB, since time.Time, bound time.Duration, fault, what string) {
	t.Helper()
	took := time.Since(since)
	t.Logf("%s %s after %s", what, took.Round(time.Millisecond), fault)
	if took > bound {
		t.Errorf("%s only %s after %s, want within %s", what, took.Round(time.Millisecond), fault, bound)
	}
}

// queryOutcome is one query of a steady load.
type queryOutcome struct {
	sent time.Time
	took time.Duration
	err  error // nil: every shard answered, with hits
}

func (q queryOutcome) answered() time.Time { return q.sent.Add(q.took) }

// steadyLoad sends a search at a fixed rate, each from its own goroutine
// (an open loop: a slow or failed answer does not hold back the next
// query), and records every outcome.
type steadyLoad struct {
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex
	outs     []queryOutcome
}

// startLoad searches index for q at rate queries a second through c until
// Stop. A query fails if it errs, a shard failed, or it found nothing; each
// has timeout to answer.
func startLoad(c *client.Client, index, q string, rate float64, timeout time.Duration) *steadyLoad {
	l := &steadyLoad{stop: make(chan struct{})}
	interval := time.Duration(float64(time.Second) / rate)
	l.wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			l.wg.Go(func() {
				sent := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				r, err := c.Search(ctx, index, &api.SearchRequest{Q: q, TimeoutMS: int(timeout.Milliseconds())})
				switch {
				case err != nil:
				case r.Shards.Failed > 0:
					err = fmt.Errorf("%d of %d shards failed: %+v", r.Shards.Failed, r.Shards.Total, r.Shards.Failures)
				case r.Total == 0:
					err = fmt.Errorf("no hits for %q", q)
				}
				l.mu.Lock()
				l.outs = append(l.outs, queryOutcome{sent: sent, took: time.Since(sent), err: err})
				l.mu.Unlock()
			})
		}
	})
	return l
}

// Stop stops sending, waits for the queries in flight and returns every
// outcome in the order the queries were sent. It may be called again.
func (l *steadyLoad) Stop() []queryOutcome {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
	return l.outcomes()
}

// waitAnswered waits until n queries sent at or after since were
// answered without failing.
func (l *steadyLoad) waitAnswered(t testing.TB, since time.Time, n int, what string) {
	t.Helper()
	waitUntil(t, 30*time.Second, what, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		ok := 0
		for _, o := range l.outs {
			if o.err == nil && !o.sent.Before(since) {
				ok++
			}
		}
		return ok >= n
	})
}

// outcomes returns the outcomes so far, in the order queries were sent.
func (l *steadyLoad) outcomes() []queryOutcome {
	l.mu.Lock()
	outs := slices.Clone(l.outs)
	l.mu.Unlock()
	slices.SortFunc(outs, func(a, b queryOutcome) int { return a.sent.Compare(b.sent) })
	return outs
}

// window counts the queries answered (or given up) in [from, to) and
// those that failed, with the first failure.
func window(outs []queryOutcome, from, to time.Time) (answered, failed int, first error) {
	for _, o := range outs {
		if at := o.answered(); at.Before(from) || !at.Before(to) {
			continue
		}
		answered++
		if o.err != nil {
			failed++
			if first == nil {
				first = o.err
			}
		}
	}
	return answered, failed, first
}

// recoveredAt returns when queries recovered after a fault: the answer
// time of the first query of the unbroken run of successes that ends the
// load, or false if the load ends with a failure.
func recoveredAt(outs []queryOutcome, fault time.Time) (time.Time, bool) {
	at := fault
	for i, o := range outs {
		if o.err != nil && o.answered().After(fault) {
			if i == len(outs)-1 {
				return time.Time{}, false
			}
			at = outs[i+1].answered()
		}
	}
	return at, true
}

// between returns the outcomes answered (or given up) in [from, to).
func between(outs []queryOutcome, from, to time.Time) []queryOutcome {
	var in []queryOutcome
	for _, o := range outs {
		if at := o.answered(); !at.Before(from) && at.Before(to) {
			in = append(in, o)
		}
	}
	return in
}

// outage is what a steady load saw of a fault.
type outage struct {
	// During is the queries answered (or given up) while the fault
	// lasted; Failed those that failed from the fault on, First the first.
	During, Failed int
	First          error
	// FromFault and FromRepair are when queries recovered, from the
	// fault and from its repair (0: before it): the answer of the first
	// query of the run of successes that ends the load.
	FromFault, FromRepair time.Duration
	// After is the queries answered from the recovery on, none failed.
	After int
}

// outageReport measures a steady load around a fault at down, repaired at
// up (outs: the outcomes of the queries answered around it), checks that
// no query failed before down and that queries recovered by themselves,
// and logs the figures.
func outageReport(t testing.TB, what string, outs []queryOutcome, down, up time.Time) outage {
	t.Helper()
	if n, failed, first := window(outs, time.Time{}, down); failed > 0 {
		t.Errorf("%s: %d of %d queries failed before the fault: %v", what, failed, n, first)
	}
	rec, ok := recoveredAt(outs, down)
	if !ok {
		_, _, first := window(outs, up, time.Now())
		t.Fatalf("%s: queries never recovered (the last one failed): %v", what, first)
	}
	var o outage
	o.During, _, _ = window(outs, down, up)
	_, o.Failed, o.First = window(outs, down, time.Now())
	o.After, _, _ = window(outs, rec, time.Now())
	o.FromFault, o.FromRepair = rec.Sub(down), max(rec.Sub(up), 0)
	t.Logf("%s: down %s, %d queries answered meanwhile; %d failed (first: %v); queries recovered %s after the fault (%s after the repair), then %d answered, none failed",
		what, up.Sub(down).Round(time.Millisecond), o.During, o.Failed, o.First,
		o.FromFault.Round(time.Millisecond), o.FromRepair.Round(time.Millisecond), o.After)
	if o.After < 10 {
		t.Errorf("%s: only %d queries after the recovery: the load did not run long enough to show it", what, o.After)
	}
	return o
}

// putUntilAcked puts doc, retrying while the write is refused (a NATS
// server coming back, a stream electing a leader), until it is
// acknowledged or timeout passes. It returns the sequence and the attempts.
func putUntilAcked(t testing.TB, c *client.Client, index string, doc []byte, timeout time.Duration) (seq uint64, attempts int) {
	t.Helper()
	testwait.UntilErr(t, timeout, fmt.Sprintf("put %s into %s acknowledged", doc, index), func() (err error) {
		attempts++
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		seq, err = c.Put(ctx, index, doc)
		if err != nil {
			return fmt.Errorf("attempt %d: %w", attempts, err)
		}
		return nil
	})
	return seq, attempts
}
