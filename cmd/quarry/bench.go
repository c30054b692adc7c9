package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
)

// benchCmd is `quarry bench`: the benchmark is a command of its own,
// quarry-bench (cmd/quarry-bench, a module of its own, so that this
// binary does not link the example plugins the benchmark runs natively).
// It runs, with the same arguments (its flags are quarry-bench's, not
// parsed here), the quarry-bench beside this executable, else the one on
// PATH, else — in a checkout of Quarry, as `go run ./cmd/quarry bench`
// is — `go run ./cmd/quarry-bench`.
func benchCmd(e *env) *cobra.Command {
	cmd := local(&cobra.Command{
		Use:   "bench [flags]",
		Short: "measure Quarry side by side with bleve, and WASM plugins with native ones",
		Long: "Measures Quarry against bleve on the same documents and cores, and WebAssembly\n" +
			"plugins against the same Go natively (open, closed and mixed read/write loops, a\n" +
			"JSON report, an SVG plot: docs/performance.md). It runs quarry-bench, a command of\n" +
			"its own, with the same arguments: the one beside quarry, else the one on PATH, else,\n" +
			"from the root of a checkout of Quarry, go run ./cmd/quarry-bench. Its flags are\n" +
			"quarry-bench's: quarry bench --help lists them.",
		DisableFlagParsing: true,
	})
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return runBench(cmd, e, args)
	}
	return cmd
}

// runBench runs quarry-bench with args; without one, a request for help
// gets bench's own.
func runBench(bench *cobra.Command, e *env, args []string) error {
	name, cmdArgs, err := benchCommand(e.lookPath)
	if err != nil {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			return bench.Help()
		}
		return err
	}
	ctx := bench.Context()
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
