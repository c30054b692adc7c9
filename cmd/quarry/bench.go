package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// runBench runs `quarry bench`: the benchmark is a command of its own,
// quarry-bench (cmd/quarry-bench, a module of its own, so that this
// binary does not link the example plugins the benchmark runs natively).
// It runs, with the same arguments, the quarry-bench beside this
// executable, else the one on PATH, else — in a checkout of Quarry, as
// `go run ./cmd/quarry bench` is — `go run ./cmd/quarry-bench`.
func runBench(ctx context.Context, e *env, args []string) error {
	name, cmdArgs, err := benchCommand(e.lookPath)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, name, append(cmdArgs, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		// quarry-bench said what went wrong; keep its exit status.
		return exitStatus(exit.ExitCode())
	}
	return err
}

// benchCommand finds quarry-bench, searching PATH with lookPath: the
// command and its leading arguments.
func benchCommand(lookPath func(string) (string, error)) (string, []string, error) {
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), "quarry-bench"); isFile(p) {
			return p, nil, nil
		}
	}
	if p, err := lookPath("quarry-bench"); err == nil {
		return p, nil, nil
	}
	if isFile(filepath.Join("cmd", "quarry-bench", "go.mod")) {
		if g, err := lookPath("go"); err == nil {
			return g, []string{"run", "./cmd/quarry-bench"}, nil
		}
	}
	return "", nil, fmt.Errorf("quarry bench runs quarry-bench, which is not installed: build it from a checkout of Quarry (go install ./cmd/quarry-bench), or run this from the checkout's root")
}

// isFile reports whether path names a regular file.
func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
