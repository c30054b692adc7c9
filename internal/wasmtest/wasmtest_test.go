package wasmtest

import (
	"os"
	"path/filepath"
	"testing"
)

// findTool takes a tool's plain name first, else its newest versioned
// name (Debian's wasm-ld-14).
func TestFindTool(t *testing.T) {
	dir := t.TempDir()
	tool := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("PATH", dir)
	if got := findTool("wasm-ld"); got != "" {
		t.Fatalf("nothing installed: found %q", got)
	}
	tool("wasm-ld-9")
	newest := tool("wasm-ld-15")
	tool("wasm-ld-14")
	tool("wasm-ld-old")
	if got := findTool("wasm-ld"); got != newest {
		t.Fatalf("versioned names only: found %q, want %q", got, newest)
	}
	plain := tool("wasm-ld")
	if got := findTool("wasm-ld"); got != plain {
		t.Fatalf("found %q, want the plain name %q", got, plain)
	}
}
