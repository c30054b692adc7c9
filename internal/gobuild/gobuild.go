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

// Sources returns the files a build of the package in dir reads, but the
// standard library's: the Go files of every package it imports, its own
// included, and their modules' go.mod files. A test that builds in
// another process reads them itself (ReadSources), so that go test's
// cache, which sees only the files a test opens, reruns it when one
// changes.
func Sources(ctx context.Context, dir string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f",
		`{{if not .Standard}}{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}{{with .Module}}{{.GoMod}}{{"\n"}}{{end}}{{end}}`, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the sources of %s: %w", dir, err)
	}
	seen := map[string]bool{}
	var files []string
	for _, f := range strings.Split(string(out), "\n") {
		if f != "" && !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	return files, nil
}

// ReadSources reads every file Sources lists for dir (see Sources).
func ReadSources(ctx context.Context, dir string) error {
	files, err := Sources(ctx, dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, err := os.ReadFile(f); err != nil {
			return err
		}
	}
	return nil
}
