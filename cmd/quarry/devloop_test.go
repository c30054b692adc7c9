package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// quarry dev refuses what it cannot use, naming it, before it connects.
func TestDevBadInput(t *testing.T) {
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
	time.Sleep(10 * time.Millisecond)
	write("boost.c", "int y;")
	now, newest := sourceState(dir)
	if now == before || newest != "boost.c" {
		t.Fatalf("a save of boost.c: changed %v, newest %q", now != before, newest)
	}
}

// devWatching runs quarry dev without --once, waits for its first round,
// saves src with fixed, and waits for the round the save starts to end
// well; then it stops the process.
func devWatching(t *testing.T, args []string, src string, fixed []byte) {
	t.Helper()
	cmd := exec.Command(quarryBin(t), args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string, 256)
	go func() { // ends when the process's stdout closes
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	waitFor := func(prefix string) string {
		t.Helper()
		deadline := time.After(2 * time.Minute)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("quarry dev ended before %q:\n%s", prefix, strings.Join(seen, "\n"))
				}
				seen = append(seen, l)
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-deadline:
				t.Fatalf("quarry dev never printed %q:\n%s", prefix, strings.Join(seen, "\n"))
			}
		}
	}
	waitFor("watching ")
	time.Sleep(20 * time.Millisecond) // a later modification time than the first round's
	if err := os.WriteFile(src, fixed, 0o644); err != nil {
		t.Fatal(err)
	}
	if head := waitFor("== "); !strings.HasSuffix(head, " "+filepath.Base(src)) {
		t.Fatalf("the round after the save is %q, want it to name %s", head, filepath.Base(src))
	}
	if end := waitFor("ok ("); end == "" {
		t.Fatal("no round ended")
	}
	if i := slices.IndexFunc(seen, func(l string) bool { return strings.HasPrefix(l, "samples: 3 of 3") }); i < 0 {
		t.Fatalf("the fixed round's samples did not pass:\n%s", strings.Join(seen, "\n"))
	}
}
