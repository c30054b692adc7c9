package loadgen

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Target sends request number i (0, 1, 2… in order of sending; use it to
// pick the query) and returns once it is answered. It is called from many
// goroutines at once.
type Target func(ctx context.Context, i int) error

// Result is a run's measurements. Only the measured requests count: not
// the warm-up's, nor (closed loop) those answered after the end.
type Result struct {
	// Latency of each answered request: in an open loop from the time it
	// was scheduled to be sent, in a closed loop from when it was sent.
	Latency *Histogram
	// Service is from when each request was actually sent to its answer
	// (the same as Latency in a closed loop).
	Service *Histogram
	// SendLag is how late each request was sent after its scheduled
	// time: the sender's own delay (open loop only; empty otherwise).
	SendLag *Histogram
	// OK and Errors count the answered requests that succeeded and
	// failed; only the successes' latencies are recorded.
	OK, Errors int64
	// ErrorSamples are the first few distinct error messages.
	ErrorSamples []string
	// Elapsed is the measured window: the closed loop's duration; for an
	// open loop from the first measured request's scheduled time to the
	// later of the last answer and the end of the schedule.
	Elapsed time.Duration
	// Throughput is OK / Elapsed, in requests a second.
	Throughput float64
	// Offered is the open loop's rate (0 for a closed loop).
	Offered float64
	// Concurrency is the closed loop's number of callers, or the most
	// requests an open loop had in flight at once.
	Concurrency int
	// CPU is the process's CPU time (user and system) during a closed
	// loop's measured part: with the target in the process, what the
	// requests cost (ProcessCPU; 0 where the platform does not say).
	CPU time.Duration
}

// maxErrorSamples bounds Result.ErrorSamples.
const maxErrorSamples = 5

// recorder collects a run's measurements from many goroutines.
type recorder struct {
	latency, service, lag Histogram
	ok, errs              atomic.Int64
	last                  atomic.Int64 // latest answer, UnixNano
	mu                    sync.Mutex
	samples               []string
}

func (r *recorder) done(at time.Time, err error) {
	for t := at.UnixNano(); ; {
		old := r.last.Load()
		if t <= old || r.last.CompareAndSwap(old, t) {
			break
		}
	}
	if err == nil {
		r.ok.Add(1)
		return
	}
	r.errs.Add(1)
	msg := err.Error()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.samples) >= maxErrorSamples {
		return
	}
	for _, s := range r.samples {
		if s == msg {
			return
		}
	}
	r.samples = append(r.samples, msg)
}

func (r *recorder) result(elapsed time.Duration) *Result {
	res := &Result{Latency: &r.latency, Service: &r.service, SendLag: &r.lag,
		OK: r.ok.Load(), Errors: r.errs.Load(), ErrorSamples: r.samples, Elapsed: elapsed}
	if elapsed > 0 {
		res.Throughput = float64(res.OK) / elapsed.Seconds()
	}
	return res
}

// call runs the target with an optional timeout.
func call(ctx context.Context, target Target, i int, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return target(ctx, i)
}

// Merge adds o's measurements to r, as if r's run had gone on for o's:
// the turns of one loop on one target, taken in between other work
// (quarry bench --turns), make one result. Latencies and counts add up,
// the elapsed time too (Throughput is over the sum), CPU adds up, and
// Concurrency is the larger; Offered stays r's.
func (r *Result) Merge(o *Result) {
	shared := r.Service == r.Latency // a closed loop's are one histogram
	r.Latency.Merge(o.Latency)
	if !shared && r.Service != nil && o.Service != nil {
		r.Service.Merge(o.Service)
	}
	if r.SendLag != nil && o.SendLag != nil && r.SendLag != r.Latency {
		r.SendLag.Merge(o.SendLag)
	}
	r.OK += o.OK
	r.Errors += o.Errors
	for _, s := range o.ErrorSamples {
		if len(r.ErrorSamples) < maxErrorSamples && !slices.Contains(r.ErrorSamples, s) {
			r.ErrorSamples = append(r.ErrorSamples, s)
		}
	}
	r.Elapsed += o.Elapsed
	if r.Elapsed > 0 {
		r.Throughput = float64(r.OK) / r.Elapsed.Seconds()
	}
	r.Concurrency = max(r.Concurrency, o.Concurrency)
	r.CPU += o.CPU
}
