//go:build long

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestREADMEAsWritten does what a newcomer does: clone the repository,
// run the README's demo command exactly as printed (read from README.md,
// so the two cannot drift), wait until it is ready, run the README's
// search, and check the clone is as clean as it was. Quarry's data goes to
// the user's data directory ($XDG_DATA_HOME, set to a temporary one here).
// It clones the committed HEAD: uncommitted changes are not in it.
func TestREADMEAsWritten(t *testing.T) {
	demo, tests, search := readmeCommands(t)
	if want := "go run ./cmd/quarry serve --demo"; demo != want {
		t.Errorf("README's demo command is %q; this test and the README's promise are about %q", demo, want)
	}
	if !strings.HasPrefix(tests, "go test ") {
		t.Errorf("README's test command is %q, want go test …", tests)
	}
	root := strings.TrimSpace(runProgram(t, ".", "git", "rev-parse", "--show-toplevel"))
	clone := filepath.Join(t.TempDir(), "quarry")
	runProgram(t, ".", "git", "clone", "--quiet", root, clone)
	data := t.TempDir()

	p := startDemo(t, clone, data, words(t, demo))
	waitReady(t, "http://127.0.0.1:7700", 5*time.Minute)
	checkConsole(t, "http://127.0.0.1:7700")
	out := runProgram(t, clone, words(t, search)...)
	if !strings.Contains(strings.ToLower(out), "noodle") {
		t.Errorf("%s found no noodles:\n%s", search, out)
	}
	p.stop(t)
	if st := runProgram(t, clone, "git", "status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("the demo left files in the source tree:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(data, "quarry", "serve", "nats")); err != nil {
		t.Errorf("no data in the user's data directory: %v", err)
	}
}

// A built binary copied to an empty directory, far from any checkout,
// runs the demo: its plugins and catalogue are inside it. It writes
// nothing where it runs.
func TestDemoFromEmptyDir(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "quarry")
	raw, err := os.ReadFile(quarryBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startDemo(t, dir, t.TempDir(), []string{"./quarry", "serve", "--demo"})
	waitReady(t, "http://127.0.0.1:7700", 5*time.Minute)
	// Ready means loaded: the whole catalogue is searchable at once.
	resp, err := http.Post("http://127.0.0.1:7700/v1/indexes/menu/search", "application/json", strings.NewReader(`{"size":0}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"total":20000`) {
		t.Fatalf("ready, but the demo index is not all there: %d %s", resp.StatusCode, body)
	}
	out := runProgram(t, dir, "./quarry", "search", "menu", "spicy noodels", "--size", "3")
	if !strings.Contains(strings.ToLower(out), "noodle") {
		t.Errorf("a misspelt search found no noodles (is the spelling plugin running?):\n%s", out)
	}
	show := runProgram(t, dir, "./quarry", "pipeline", "show", "menu")
	for _, want := range []string{"by demo", "rewriter spelling", "rewriter synonyms", "ranker   georank", "brokers: all 1 run revision"} {
		if !strings.Contains(show, want) {
			t.Errorf("pipeline show does not say %q:\n%s", want, show)
		}
	}
	p.stop(t)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the demo wrote to the directory it ran in: %v", names)
	}
}

// words splits a command line as a shell would for the README's simple
// commands: words, and double- or single-quoted strings.
func words(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case strings.ContainsRune("|&;<>()$`\\*?", r):
			t.Fatalf("README command %q needs a shell; keep the set-up commands plain", line)
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// demoProcess is `quarry serve --demo` running as a process group.
type demoProcess struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startDemo starts args in dir with XDG_DATA_HOME set to data (where
// quarry keeps its data by default), in a process group of its own, once
// the demo's default ports are free (a demo stopped just before may still
// be closing them).
func startDemo(t *testing.T, dir, data string, args []string) *demoProcess {
	t.Helper()
	for _, addr := range []string{"127.0.0.1:4222", "127.0.0.1:7700"} {
		waitFor(t, time.Minute, "the demo's default address "+addr+" to be free (is another process holding it?)", func() (bool, string) {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return false, err.Error()
			}
			ln.Close()
			return true, ""
		})
	}
	p := &demoProcess{cmd: exec.Command(args[0], args[1:]...)}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+data, "QUARRY_DATA=")
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cmd.Wait()
	})
	return p
}

// stop sends SIGTERM to the group and checks that quarry stops cleanly.
func (p *demoProcess) stop(t *testing.T) {
	t.Helper()
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if !strings.Contains(p.out.String(), "shutting down") {
			t.Errorf("no clean shutdown (%v):\n%s", err, tail(p.out.String()))
		}
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after SIGTERM:\n%s", tail(p.out.String()))
	}
}

func tail(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// runProgram runs a program in dir and returns its output.
func runProgram(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkConsole checks that the README's tour starts where the demo serves
// its console, and that it does: the page, and the demo index offered to
// the open (loopback) API. TestConsole (package node) drives the pages.
func checkConsole(t *testing.T, base string) {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, tour, _ := strings.Cut(string(raw), "\n## A short tour\n"); !strings.HasPrefix(strings.TrimSpace(tour), "Open "+base+" ") {
		t.Errorf("README's tour does not start with \"Open %s\": %.80q", base, strings.TrimSpace(tour))
	}
	for path, want := range map[string]string{"/": `src="/console/app.js"`, "/v1/me": `"indexes":["menu"]`} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %.300s, want %s", path, resp.StatusCode, body, want)
		}
	}
}
