package gobuild

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The same source builds to the same bytes, whatever GOFLAGS the caller
// has; a package that does not compile is an error that names it.
func TestBuildReproducible(t *testing.T) {
	ctx := context.Background()
	dir := "../../examples/plugins/synonyms"
	a, b := filepath.Join(t.TempDir(), "a.wasm"), filepath.Join(t.TempDir(), "b.wasm")
	if err := Build(ctx, dir, a, Reactor); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOFLAGS", "-mod=readonly")
	if err := Build(ctx, dir, b, Reactor); err != nil {
		t.Fatal(err)
	}
	wa, _ := os.ReadFile(a)
	wb, _ := os.ReadFile(b)
	if len(wa) == 0 || !bytes.Equal(wa, wb) {
		t.Fatalf("two builds of %s differ (%d and %d bytes)", dir, len(wa), len(wb))
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "go.mod"), []byte("module bad\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(bad, "main.go"), []byte("package main\n\nfunc main() { undefined() }\n"), 0o644)
	err := Build(ctx, bad, filepath.Join(bad, "x.wasm"), Reactor)
	if err == nil || !strings.Contains(err.Error(), "undefined") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("a package that does not compile: %v", err)
	}
	if got := Line(Reactor); got != "GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= go build -trimpath -buildvcs=false -buildmode=c-shared" {
		t.Errorf("Line: %s", got)
	}
}
