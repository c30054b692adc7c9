// Package gobuild builds Go packages to WebAssembly with the standard
// toolchain, one way for every caller: pipeline files (broker), the tests
// (internal/wasmtest) and the demo's embedded plugins (internal/demo).
// Builds are reproducible: -trimpath, -buildvcs=false and GOFLAGS
// emptied (the go command records GOFLAGS in the module), so the same
// source and toolchain give the same bytes.
package gobuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Mode is a Go build mode for WebAssembly.
type Mode string

const (
	// Reactor is a plugin: a c-shared module that exports the plugin ABI
	// and _initialize.
	Reactor Mode = "c-shared"
	// Command is a WASI command: it exports _start (for tests of what
	// the host does with one).
	Command Mode = "default"
)

// env is the build's environment, added to the caller's.
var env = []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS="}

// Line is the build of mode as a shell line, for records of how a module
// was built (internal/demo's manifest).
func Line(mode Mode) string {
	return strings.Join(env, " ") + " go build -trimpath -buildvcs=false -buildmode=" + string(mode)
}

// Build builds the Go package main in dir into the file out.
func Build(ctx context.Context, dir, out string, mode Mode) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-buildmode="+string(mode), "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s (GOOS=wasip1 GOARCH=wasm, -buildmode=%s): %v\n%s", dir, mode, err, msg)
	}
	return nil
}
