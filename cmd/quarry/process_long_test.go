//go:build long

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The long tier's tests that need quarry as a process of its own (killed
// with -9, stopped with a signal, run as a user runs it) build the binary
// once per test run; every other test runs quarry in its process (cli,
// startCLI).

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// quarryBin builds the quarry binary once per test run.
func quarryBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "quarry-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "quarry")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// waitReady waits until GET url/readyz answers 200.
func waitReady(t *testing.T, base string, within time.Duration) {
	t.Helper()
	waitFor(t, within, "GET "+base+"/readyz to answer 200", func() (bool, string) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200, fmt.Sprintf("%d %s", resp.StatusCode, b)
	})
}
