package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/quarrysearch/quarry/internal/natstest"
)

// oneLine checks that a failed command said exactly one line on stderr,
// with no panic or stack, containing every want.
func oneLine(t *testing.T, stderr string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 || strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Fatalf("want one line on stderr, got %d:\n%s", len(lines), stderr)
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("stderr %q does not say %q", lines[0], w)
		}
	}
}

// busyPort holds a loopback port for the test and returns it.
func busyPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// Every start-up failure a person can cause with one setting is one line
// naming the cause and the flag to change, with exit status 1 (2 for bad
// input), and no panic.
func TestStartupErrors(t *testing.T) {
	// Not parallel: serve and the roles set process-wide knobs
	// (cmdline.Runtime.Apply makes their logger the default one).
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	badPipeline := filepath.Join(t.TempDir(), "pipeline.json")
	if err := os.WriteFile(badPipeline, []byte(`{"rewriters":[{"plugin":"x","wasm":"x.wasm","bogus":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	natsPort, httpPort, freePort := busyPort(t), busyPort(t), natstest.FreePort(t)
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"NATS port in use", []string{"serve", "--data", t.TempDir(), "--nats-port", natsPort, "--http", ""}, 1,
			[]string{"NATS address 127.0.0.1:" + natsPort + " is already in use", "change --nats-port"}},
		{"HTTP port in use", []string{"serve", "--data", t.TempDir(), "--nats-port", "-1", "--http", "127.0.0.1:" + httpPort}, 1,
			[]string{"HTTP address 127.0.0.1:" + httpPort + " is already in use", "change --http"}},
		{"metrics port in use", []string{"serve", "--data", t.TempDir(), "--nats-port", "-1", "--http", "", "--metrics", "127.0.0.1:" + httpPort}, 1,
			[]string{"metrics address 127.0.0.1:" + httpPort + " is already in use", "change --metrics"}},
		{"data directory under a file", []string{"serve", "--data", filepath.Join(file, "data"), "--nats-port", "-1", "--http", ""}, 1,
			[]string{"data directory " + filepath.Join(file, "data") + " cannot be created: not a directory", "change --data"}},
		{"NATS unreachable", []string{"searcher", "--nats", fmt.Sprintf("nats://127.0.0.1:%d", freePort), "--data", t.TempDir()}, 1,
			[]string{fmt.Sprintf("cannot connect to NATS at nats://127.0.0.1:%d", freePort), "check --nats or QUARRY_NATS"}},
		{"bad pipeline file", []string{"serve", "--data", t.TempDir(), "--nats-port", "-1", "--http", "", "--pipeline", "menu=" + badPipeline}, 2,
			[]string{"menu=" + badPipeline, `unknown field "bogus"`, "fix --pipeline"}},
		{"missing pipeline file", []string{"broker", "--nats", "nats://127.0.0.1:1", "--data", t.TempDir(), "--pipeline", "menu=/no/such.json"}, 2,
			[]string{"/no/such.json", "no such file", "fix --pipeline"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := cli(t, "", c.args...)
			if code != c.code {
				t.Errorf("exit status %d, want %d", code, c.code)
			}
			oneLine(t, stderr, c.want...)
		})
	}
}

// Two roles given one data directory: the second is refused, naming the
// first, and the first keeps its shards. (Before, the second searcher
// deleted the first's shards and one of them died.) Here both run in the
// test's process, which locks the directory as two processes do (an
// flock of each one's own open of the lock file); once the first has
// stopped, the directory is free. TestDataDirLockedKill9 (long tier)
// kills a searcher process with -9 instead.
func TestDataDirLocked(t *testing.T) {
	// Not parallel: serve and the roles set process-wide knobs
	// (cmdline.Runtime.Apply makes their logger the default one).
	s := natstest.Start(t)
	dir := t.TempDir()
	if out, errOut, code := cli(t, "", "init", "--nats", s.ClientURL(), "--replicas", "1"); code != 0 { // the roles make no resources
		t.Fatalf("quarry init: %d %s %s", code, out, errOut)
	}
	args := []string{"searcher", "--nats", s.ClientURL(), "--data", dir}
	first := startCLI(t, args...)
	waitFor(t, 30*time.Second, "the first searcher to start", func() (bool, string) {
		return strings.Contains(first.stderr.String(), "role started"), first.stderr.String()
	})
	_, errOut, code := cli(t, "", args...)
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	oneLine(t, errOut, "data directory "+dir+" is in use by quarry searcher", fmt.Sprintf("pid %d", os.Getpid()), "change --data")
	if !first.running() {
		t.Fatalf("the first searcher stopped:\n%s", first.stderr)
	}
	if code := first.stop(t); code != exitOK {
		t.Fatalf("the first searcher stopped with status %d:\n%s", code, first.stderr)
	}
	again := startCLI(t, args...)
	waitFor(t, 30*time.Second, "a searcher to take the directory the first held", func() (bool, string) {
		return strings.Contains(again.stderr.String(), "role started"), again.stderr.String()
	})
}

// Exit codes are the same for every command: 0 ok, 1 a runtime failure,
// 2 bad use or bad input.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	url, _ := cluster(t, true)
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"version"}, 0},
		{[]string{"search", "--help"}, 0},
		{[]string{}, 2},
		{[]string{"nosuch"}, 2},
		{[]string{"search"}, 2},
		{[]string{"search", "--size", "x", "menu", "q"}, 2},
		{[]string{"search", "--nats", url, "nosuchindex", "q"}, 2},
		{[]string{"index", "create", "--nats", url, "Bad Name!"}, 2},
		{[]string{"search", "--nats", fmt.Sprintf("nats://127.0.0.1:%d", natstest.FreePort(t)), "--timeout", "1s", "menu", "q"}, 1},
	}
	for _, c := range cases {
		_, stderr, code := cli(t, "", c.args...)
		if code != c.code {
			t.Errorf("quarry %s: exit status %d, want %d\n%s", strings.Join(c.args, " "), code, c.code, stderr)
		}
	}
}

// Every flag of every command renders in --help as taking what it takes:
// a word in backquotes in its usage would make pflag (and flag) print it
// as the flag's value ("--demo menu", "--replicas quarry init").
func TestFlagsRender(t *testing.T) {
	t.Parallel()
	e, _, _ := testEnv("", nil)
	var started bool
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			seen++
			if name, _ := pflag.UnquoteUsage(f); strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: --help shows it as taking %q: drop the backquotes in its usage", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(e.newRoot(&started))
	if seen < 200 {
		t.Fatalf("only %d flags seen", seen)
	}
}
