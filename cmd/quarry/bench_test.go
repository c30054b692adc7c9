package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBenchNeedsQuarryBench: quarry bench runs quarry-bench (a command
// of its own, tested in cmd/quarry-bench); where there is none — not
// beside quarry (here the test binary, alone in its build directory), not
// on PATH (a search that finds nothing), not a checkout's root (this
// package's directory is none) — it says how to get one.
func TestBenchNeedsQuarryBench(t *testing.T) {
	t.Parallel()
	e, stdout, stderr := testEnv("", nil)
	e.lookPath = func(string) (string, error) { return "", exec.ErrNotFound }
	code := runIn(t, e, "bench", "--duration", "1s")
	if code != exitFailure || !strings.Contains(stderr.String(), "quarry bench runs quarry-bench, which is not installed: build it from a checkout of Quarry (go install ./cmd/quarry-bench)") {
		t.Fatalf("exit status %d, output:\n%s%s", code, stdout, stderr)
	}
}
