// Package testwait is the tests' one way to wait for a state they can
// observe: a condition polled until it holds, with a deadline and a
// message that says what was awaited.
//
// A test never sleeps for a fixed time hoping that something happened:
// it asks Until for the state itself (a search total, a sequence number
// applied, a metric). Polling starts at once and backs off from 1 ms to
// 50 ms, so a state reached quickly is seen quickly and a slow one does
// not take a core from the system under test.
package testwait

import (
	"context"
	"testing"
	"time"
)

// Until polls cond until it returns true and returns how long that took,
// or fails the test after timeout naming what it waited for.
func Until(tb testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	tb.Helper()
	if d, ok := poll(timeout, cond); ok {
		return d
	}
	tb.Fatalf("%s: not after %s", what, timeout)
	return 0
}

// UntilErr polls f until it returns nil and returns how long that took,
// or fails the test after timeout naming what it waited for and f's last
// error.
func UntilErr(tb testing.TB, timeout time.Duration, what string, f func() error) time.Duration {
	tb.Helper()
	var last error
	if d, ok := poll(timeout, func() bool { last = f(); return last == nil }); ok {
		return d
	}
	tb.Fatalf("%s: not after %s: %v", what, timeout, last)
	return 0
}

// poll calls cond until it holds or timeout passes.
func poll(timeout time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ok := Poll(ctx, cond)
	return time.Since(start), ok
}

// Poll calls cond until it holds (true) or ctx ends (false), backing off
// as Until does. It fails nothing: for a test's goroutines, which may not
// fail the test, and for retries whose caller reports the last error.
func Poll(ctx context.Context, cond func() bool) bool {
	pause := time.Millisecond
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pause): // between two looks at the state, never instead of one
		}
		pause = min(pause*2, 50*time.Millisecond)
	}
}
