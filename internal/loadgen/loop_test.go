package loadgen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A target that serves one request at a time, each taking 10ms, offered
// 200 a second (one every 5ms) with at most one request in flight: the
// sender falls behind by 5ms a request. It still sends every request, and
// their latencies count from their scheduled times, growing with the
// backlog, while each one's service time stays 10ms.
func TestOpenLoopMeasuresFromSchedule(t *testing.T) {
	var mu sync.Mutex
	slow := func(ctx context.Context, i int) error {
		mu.Lock()
		defer mu.Unlock()
		time.Sleep(10 * time.Millisecond) // the target's service time, what the loop measures
		return nil
	}
	cases := []struct {
		name        string
		maxInFlight int
	}{
		{"sender blocked", 1},      // the sender waits for each answer
		{"target queued", 1000000}, // the sender keeps time; requests queue in the target
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := OpenLoop(context.Background(), OpenConfig{Rate: 200, Duration: 500 * time.Millisecond, MaxInFlight: c.maxInFlight}, slow)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != 100 || res.Errors != 0 {
				t.Fatalf("%d answered, %d errors; want all 100 scheduled requests", res.OK, res.Errors)
			}
			// Request i is answered at about (i+1)·10ms, scheduled at i·5ms:
			// its latency is about 10ms + i·5ms, 0.5s for the last.
			if p50, max := res.Latency.Quantile(0.5), res.Latency.Max(); p50 < 200*time.Millisecond || max < 450*time.Millisecond {
				t.Errorf("latency p50 %v, max %v: not measured from the schedule (want ≈ 260ms and ≈ 505ms)", p50, max)
			}
			if c.maxInFlight == 1 {
				if s := res.Service.Quantile(0.99); s > 100*time.Millisecond {
					t.Errorf("service time p99 %v, want ≈ 10ms: each request is sent when the last is answered", s)
				}
				if lag := res.SendLag.Max(); lag < 400*time.Millisecond {
					t.Errorf("send lag max %v, want ≈ 0.5s: the sender fell behind", lag)
				}
			}
			if res.Elapsed < time.Second || res.Throughput > 110 {
				t.Errorf("elapsed %v, throughput %.0f/s; want ≥ 1s and ≈ 100/s (one request each 10ms)", res.Elapsed, res.Throughput)
			}
		})
	}
}

// A fast target at a moderate rate: latency is service time, the
// warm-up's requests are sent and not counted, errors are counted and
// sampled.
func TestOpenLoopWarmupAndErrors(t *testing.T) {
	var sent atomic.Int64
	target := func(ctx context.Context, i int) error {
		sent.Add(1)
		if i%10 == 9 {
			return errors.New("every tenth fails")
		}
		return nil
	}
	res, err := OpenLoop(context.Background(), OpenConfig{Rate: 500, Warmup: 100 * time.Millisecond, Duration: 200 * time.Millisecond, Spin: time.Millisecond}, target)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Load() != 150 || res.OK+res.Errors != 100 || res.Errors != 10 {
		t.Fatalf("sent %d, measured %d ok and %d errors; want 150 sent, 100 measured, 10 errors", sent.Load(), res.OK, res.Errors)
	}
	if len(res.ErrorSamples) != 1 || !strings.Contains(res.ErrorSamples[0], "tenth") {
		t.Errorf("error samples %q", res.ErrorSamples)
	}
	if res.Latency.Count() != 90 || res.Offered != 500 {
		t.Errorf("%d latencies recorded, offered %g", res.Latency.Count(), res.Offered)
	}
}

func TestClosedLoop(t *testing.T) {
	target := func(ctx context.Context, i int) error {
		time.Sleep(2 * time.Millisecond) // the target's service time, what the loop measures
		return nil
	}
	res, err := ClosedLoop(context.Background(), ClosedConfig{Concurrency: 4, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond}, target)
	if err != nil {
		t.Fatal(err)
	}
	// Four callers, 2ms a request: at most 2,000 a second.
	if res.Throughput < 300 || res.Throughput > 2100 || res.Errors != 0 || res.Concurrency != 4 {
		t.Errorf("throughput %.0f/s, %d errors, concurrency %d", res.Throughput, res.Errors, res.Concurrency)
	}
	if p50 := res.Latency.Quantile(0.5); p50 < 2*time.Millisecond {
		t.Errorf("p50 %v, under the target's 2ms", p50)
	}
}

// TestClosedLoopCPU: the CPU a closed loop reports is what its target
// burned in the measured part, not the warm-up's or the sleeping callers'.
func TestClosedLoopCPU(t *testing.T) {
	// Each call of the spinning target burns 1 ms of the process's CPU, so
	// the loop's CPU is at least its calls' milliseconds (less one call
	// cut by each end of the measured window), however busy the machine is
	// (a bound on CPU per wall time would fail on a loaded one: CI saw
	// 123 ms in 300 ms). The sleeping target burns next to none.
	spin := func(d time.Duration) {
		for start := ProcessCPU(); ProcessCPU()-start < d; {
		}
	}
	for _, tc := range []struct {
		name     string
		target   Target
		perCall  time.Duration // CPU each call burns, at least
		maxTotal time.Duration
	}{
		// A target that waits without burning CPU: its service time is a sleep.
		{"sleeping", func(context.Context, int) error { time.Sleep(2 * time.Millisecond); return nil }, 0, 60 * time.Millisecond},
		{"spinning", func(context.Context, int) error { spin(time.Millisecond); return nil }, time.Millisecond, 700 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ClosedLoop(context.Background(), ClosedConfig{Concurrency: 1, Duration: 300 * time.Millisecond, Warmup: 200 * time.Millisecond}, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK < 10 {
				t.Fatalf("%d calls in 300 ms: too few to measure", res.OK)
			}
			if least := time.Duration(res.OK-2) * tc.perCall; res.CPU < least || res.CPU > tc.maxTotal {
				t.Errorf("CPU %v for %d calls, want %v to %v", res.CPU, res.OK, least, tc.maxTotal)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := OpenLoop(ctx, OpenConfig{Rate: 100, Duration: time.Minute}, func(context.Context, int) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) || res == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("open loop cancelled: %v after %v", err, time.Since(start))
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := ClosedLoop(ctx2, ClosedConfig{Concurrency: 2, Duration: time.Minute}, func(context.Context, int) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("closed loop cancelled: %v", err)
	}
}

func TestBadConfig(t *testing.T) {
	nop := func(context.Context, int) error { return nil }
	for _, c := range []OpenConfig{{Rate: 0, Duration: time.Second}, {Rate: 10}, {Rate: 10, Duration: time.Second, Warmup: -1}} {
		if _, err := OpenLoop(context.Background(), c, nop); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	for _, c := range []ClosedConfig{{Concurrency: 0, Duration: time.Second}, {Concurrency: 1}} {
		if _, err := ClosedLoop(context.Background(), c, nop); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestMerge: two turns of a loop merged count every request once (a
// closed loop's latency and service are one histogram: merged once), their
// times and CPU add up, throughput is over both, and error samples stay
// distinct and bounded.
func TestMerge(t *testing.T) {
	turn := func(fail bool) *Result {
		t.Helper()
		target := func(ctx context.Context, i int) error {
			time.Sleep(time.Millisecond)
			if fail && i%2 == 0 {
				return fmt.Errorf("error %d", i%12)
			}
			return nil
		}
		res, err := ClosedLoop(context.Background(), ClosedConfig{Concurrency: 2, Duration: 100 * time.Millisecond, Warmup: 10 * time.Millisecond}, target)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := turn(false), turn(true)
	ok, errs, elapsed, cpu, lat := a.OK+b.OK, a.Errors+b.Errors, a.Elapsed+b.Elapsed, a.CPU+b.CPU, a.Latency.Count()+b.Latency.Count()
	a.Merge(b)
	if a.OK != ok || a.Errors != errs || a.Elapsed != elapsed || a.CPU != cpu {
		t.Errorf("merged: %d ok, %d errors, %v, CPU %v; want %d, %d, %v, %v", a.OK, a.Errors, a.Elapsed, a.CPU, ok, errs, elapsed, cpu)
	}
	if a.Latency.Count() != lat || a.Service.Count() != lat {
		t.Errorf("merged: %d latencies, %d service times, want %d", a.Latency.Count(), a.Service.Count(), lat)
	}
	if want := float64(ok) / elapsed.Seconds(); a.Throughput != want {
		t.Errorf("merged throughput %.1f, want %.1f", a.Throughput, want)
	}
	if len(a.ErrorSamples) == 0 || len(a.ErrorSamples) > maxErrorSamples {
		t.Errorf("error samples %q", a.ErrorSamples)
	}
}
