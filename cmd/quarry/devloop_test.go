package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// quarry dev refuses what it cannot use, naming it, before it connects.
func TestDevBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "dishes", filepath.Join(dir, "missing"), "--once"}, "not a folder"},
		{[]string{"dev", "dishes", dir, "--once", "--name", "Bad Name"}, `plugin name "Bad Name"`},
		{[]string{"dev", "dishes", dir, "--once", "--queries", "-1"}, "--queries -1"},
		{[]string{"dev", "dishes"}, "Usage: quarry dev"},
	} {
		_, errOut, code := cli(t, "", c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("quarry %s: exit %d %q, want an error with %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}

// A save changes the folder's fingerprint; a build's output, node_modules
// and got.ndjson do not.
func TestSourceState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("boost.c", "int x;")
	write("config.json", "{}")
	before, _ := sourceState(dir)
	write("boost.wasm", "built")
	write("got.ndjson", "{}")
	write("node_modules/x/index.ts", "export {}")
	if now, _ := sourceState(dir); now != before {
		t.Fatalf("build output changed the state:\n%s\n%s", before, now)
	}
	write("boost.c", "int y;") // the same size: only the time tells
	touchAfter(t, filepath.Join(dir, "boost.c"), filepath.Join(dir, "config.json"))
	now, newest := sourceState(dir)
	if now == before || newest != "boost.c" {
		t.Fatalf("a save of boost.c: changed %v, newest %q", now != before, newest)
	}
}

// touchAfter sets path's modification time a second after that of
// other, the file saved last: a save a file system's clock tells apart,
// which two saves a moment apart may not be (its granularity can be
// coarser than the moment).
func touchAfter(t *testing.T, path, other string) {
	t.Helper()
	st, err := os.Stat(other)
	if err != nil {
		t.Fatal(err)
	}
	later := st.ModTime().Add(time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

// newestTool takes the plain name first, else the newest versioned one by
// number (clang-14 over clang-9, which a string order would pick), and
// nothing that is not an executable file.
func TestNewestTool(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"clang-9": 0o755, "clang-14": 0o755, "clang-15": 0o644, "clang-x": 0o755} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	if got := newestTool("clang"); got != filepath.Join(dir, "clang-14") {
		t.Fatalf("newestTool(clang) = %q, want clang-14", got)
	}
	if got := newestTool("wasm-ld"); got != "" {
		t.Fatalf("newestTool(wasm-ld) = %q with none on PATH", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "clang"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := newestTool("clang"); got != filepath.Join(dir, "clang") {
		t.Fatalf("newestTool(clang) = %q, want the plain clang first", got)
	}
}
