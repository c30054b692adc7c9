package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ClosedConfig configures a closed-loop run.
type ClosedConfig struct {
	// Concurrency is the number of callers (> 0).
	Concurrency int
	// Duration is the measured part of the run (> 0).
	Duration time.Duration
	// Warmup runs the callers before the measured part; requests answered
	// during it are not counted.
	Warmup time.Duration
	// Timeout bounds each request (0: none).
	Timeout time.Duration
}

func (c *ClosedConfig) check() error {
	switch {
	case c.Concurrency <= 0 || c.Concurrency > 100000:
		return fmt.Errorf("closed loop: concurrency must be 1 to 100,000, got %d", c.Concurrency)
	case c.Duration <= 0:
		return fmt.Errorf("closed loop: duration must be more than 0, got %s", c.Duration)
	case c.Warmup < 0 || c.Timeout < 0:
		return errors.New("closed loop: warm-up and timeout must not be negative")
	}
	return nil
}

// ClosedLoop runs cfg.Concurrency callers that each send a request as soon
// as their last one is answered, for cfg.Warmup and then cfg.Duration, and
// measures the requests answered within the measured part: the target's
// throughput at that concurrency, and the latency it comes at. Requests
// still running at the end are waited for, not counted. If ctx
// ends first, it returns what it measured with ctx's error.
func ClosedLoop(ctx context.Context, cfg ClosedConfig, target Target) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	var rec recorder
	var next atomic.Int64
	start := time.Now()
	to := start.Add(cfg.Warmup + cfg.Duration)
	// The measured part starts when the process's CPU time is read, not
	// at start+Warmup: a timer fires late on a busy machine, and a call
	// answered before the reading but counted would make the CPU look
	// cheaper than it was (CI: 170 ms for 174 calls of 1 ms each). It
	// ends after the last answer (the few requests answered after the end
	// and not counted add a little).
	var cpuFrom, measuredFrom atomic.Int64 // measuredFrom: Unix ns, 0 before
	measure := func() {
		cpuFrom.Store(int64(ProcessCPU()))
		measuredFrom.Store(time.Now().UnixNano())
	}
	t0 := time.AfterFunc(cfg.Warmup, measure)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				sent := time.Now()
				if !sent.Before(to) {
					return
				}
				err := call(ctx, target, int(next.Add(1)-1), cfg.Timeout)
				done := time.Now()
				if from := measuredFrom.Load(); from == 0 || done.UnixNano() < from || done.After(to) {
					continue
				}
				rec.done(done, err)
				if err == nil {
					rec.latency.Record(done.Sub(sent))
				}
			}
		})
	}
	wg.Wait()
	cpuTo := ProcessCPU()
	elapsed := cfg.Duration
	if t0.Stop() { // ended before the measured part (ctx)
		cpuFrom.Store(int64(cpuTo))
	} else if from := measuredFrom.Load(); from != 0 {
		elapsed = max(to.Sub(time.Unix(0, from)), 0)
	}
	res := rec.result(elapsed)
	res.Service, res.SendLag = res.Latency, &Histogram{}
	res.Concurrency = cfg.Concurrency
	res.CPU = cpuTo - time.Duration(cpuFrom.Load())
	return res, ctx.Err()
}
