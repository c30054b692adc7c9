package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// OpenConfig configures an open-loop run.
type OpenConfig struct {
	// Rate is the requests sent a second (> 0).
	Rate float64
	// Duration is the measured part of the run (> 0).
	Duration time.Duration
	// Warmup runs the same schedule before the measured part; its
	// requests are sent but not counted.
	Warmup time.Duration
	// MaxInFlight caps the requests outstanding at once (default 10,000):
	// at the cap the sender waits for an answer before sending, and the
	// wait counts as the late requests' latency.
	MaxInFlight int
	// Spin: the sender sleeps until this long before each send time, then
	// yields the processor until the time (Go's timers can wake up to a
	// millisecond late, and in an open loop that lateness is latency).
	// 0: sleep only.
	Spin time.Duration
	// Timeout bounds each request (0: none).
	Timeout time.Duration
}

func (c *OpenConfig) check() error {
	switch {
	case !(c.Rate > 0) || c.Rate > 1e7:
		return fmt.Errorf("open loop: rate must be more than 0 and at most 10,000,000 a second, got %g", c.Rate)
	case c.Duration <= 0:
		return fmt.Errorf("open loop: duration must be more than 0, got %s", c.Duration)
	case c.Warmup < 0 || c.MaxInFlight < 0 || c.Spin < 0 || c.Timeout < 0:
		return errors.New("open loop: warm-up, max in flight, spin and timeout must not be negative")
	case float64(c.Duration+c.Warmup)/float64(time.Second)*c.Rate > 1e9:
		return fmt.Errorf("open loop: %g requests a second for %s is too many requests", c.Rate, c.Duration+c.Warmup)
	}
	return nil
}

// OpenLoop sends requests to target at cfg.Rate for cfg.Warmup, then
// cfg.Duration, and measures them (see the package documentation).
// Request i is scheduled at start + i/rate. A sender that falls behind
// (the in-flight cap, a stalled process) sends the requests it owes at
// once, never skipping one, and their latency counts from their schedule.
// It returns when every request sent has been answered. If ctx ends
// first, it stops sending and returns what it measured with ctx's error.
func OpenLoop(ctx context.Context, cfg OpenConfig, target Target) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 10000
	}
	interval := float64(time.Second) / cfg.Rate
	warm := int(float64(cfg.Warmup) / interval)
	total := warm + max(int(float64(cfg.Duration)/interval), 1)
	var rec recorder
	sem := make(chan struct{}, cfg.MaxInFlight)
	var inFlight, peak atomic.Int64
	var wg sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	start := time.Now()
	var err error
send:
	for i := range total {
		due := start.Add(time.Duration(float64(i) * interval))
		if err = sleepUntil(ctx, timer, due, cfg.Spin); err != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			err = ctx.Err()
			break send
		}
		sent := time.Now()
		if n := inFlight.Add(1); n > peak.Load() {
			peak.Store(n) // only the sender writes peak
		}
		wg.Go(func() {
			defer func() { <-sem }()
			err := call(ctx, target, i, cfg.Timeout)
			done := time.Now()
			inFlight.Add(-1)
			if i < warm {
				return
			}
			rec.done(done, err)
			if err == nil {
				rec.latency.Record(done.Sub(due))
				rec.service.Record(done.Sub(sent))
				rec.lag.Record(sent.Sub(due))
			}
		})
	}
	wg.Wait()
	first := start.Add(time.Duration(float64(warm) * interval))
	end := first.Add(cfg.Duration)
	if last := time.Unix(0, rec.last.Load()); last.After(end) {
		end = last
	}
	res := rec.result(end.Sub(first))
	res.Offered, res.Concurrency = cfg.Rate, int(peak.Load())
	return res, err
}

// sleepUntil returns at t (or at once if t has passed), or when ctx ends.
// With spin > 0 it sleeps until t-spin, then yields the processor until t.
func sleepUntil(ctx context.Context, timer *time.Timer, t time.Time, spin time.Duration) error {
	if d := time.Until(t) - spin; d > 0 {
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
	}
	for spin > 0 && time.Now().Before(t) {
		runtime.Gosched()
	}
	return ctx.Err()
}
