package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBenchNeedsQuarryBench: quarry bench runs quarry-bench (a command
// of its own, tested in cmd/quarry-bench); where there is none — not
// beside quarry, not on PATH, not a checkout's root — it says how to get
// one.
func TestBenchNeedsQuarryBench(t *testing.T) {
	cmd := exec.Command(quarryBin(t), "bench", "--duration", "1s")
	cmd.Dir, cmd.Env = t.TempDir(), []string{"PATH=", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitFailure || !strings.Contains(string(out), "quarry bench runs quarry-bench, which is not installed: build it from a checkout of Quarry (go install ./cmd/quarry-bench)") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
}
