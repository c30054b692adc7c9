package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/quarrysearch/quarry/internal/clitest"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// quarryBin builds quarry and quarry-bench side by side, once per test
// run, and returns quarry's path: the tests run `quarry bench`, so they
// also test that quarry finds the quarry-bench beside it.
func quarryBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "quarry-bench-bin-"); buildErr != nil {
			return
		}
		for out, pkg := range map[string]string{"quarry": "../quarry", "quarry-bench": "."} {
			b, err := exec.Command("go", "build", "-o", filepath.Join(binDir, out), pkg).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "quarry")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cli runs the quarry binary and returns its stdout, stderr and exit code.
func cli(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return clitest.Run(t, quarryBin(t), stdin, args...)
}
