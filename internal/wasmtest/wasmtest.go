// Package wasmtest builds WebAssembly guests for tests: Go plugins with the
// standard toolchain (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared) and
// WAT modules with wabt's wat2wasm. It is the one helper every test that
// needs a real plugin uses; a missing toolchain fails the test.
package wasmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string][]byte{}
)

// GoPlugin builds the Go plugin in dir (a package main) and returns the
// .wasm bytes. Builds are cached per test binary.
func GoPlugin(tb testing.TB, dir string) []byte {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if b, ok := built[abs]; ok {
		return b
	}
	out := filepath.Join(tb.TempDir(), filepath.Base(abs)+".wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build plugin %s: %v\n%s", dir, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	built[abs] = b
	return b
}

// WAT compiles WebAssembly text with wat2wasm (Debian package wabt).
func WAT(tb testing.TB, src string) []byte {
	tb.Helper()
	dir := tb.TempDir()
	in, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		tb.Fatal(err)
	}
	if msg, err := exec.Command("wat2wasm", in, "-o", out).CombinedOutput(); err != nil {
		tb.Fatalf("wat2wasm (install Debian's wabt): %v\n%s\n%s", err, msg, numbered(src))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// WATFile compiles a .wat file.
func WATFile(tb testing.TB, path string) []byte {
	tb.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return WAT(tb, string(src))
}

func numbered(src string) string {
	var b strings.Builder
	for i, l := range strings.Split(src, "\n") {
		b.WriteString(strings.Repeat(" ", 4-len(itoa(i+1))) + itoa(i+1) + " " + l + "\n")
	}
	return b.String()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for i > 0 {
		d = append([]byte{byte('0' + i%10)}, d...)
		i /= 10
	}
	return string(d)
}
