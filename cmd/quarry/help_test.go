package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command of the tree has a one-line summary, and its --help,
// generated from the tree, exits 0 and shows its usage.
func TestHelp(t *testing.T) {
	t.Parallel()
	e, _, _ := testEnv("", nil)
	var started bool
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Hidden {
			return
		}
		if c.Short == "" || strings.Contains(c.Short, "\n") {
			t.Errorf("%s: its summary (Short) is %q, want one line", c.CommandPath(), c.Short)
		}
		if c.DisableFlagParsing {
			return // not on cobra yet: its help is its own
		}
		seen++
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		out, errOut, code := cli(t, "", args...)
		if code != 0 || !strings.Contains(out, "Usage:\n  "+c.CommandPath()) || errOut != "" {
			t.Errorf("quarry %s: exit %d, stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	walk(e.newRoot(&started, 0))
	if seen < 5 {
		t.Fatalf("only %d commands' help seen", seen)
	}
	out, _, code := cli(t, "", "help")
	if code != 0 || !strings.Contains(out, "Usage:\n  quarry COMMAND") || !strings.Contains(out, "--nats string") {
		t.Errorf("quarry help: exit %d\n%s", code, out)
	}
}

// quarry completion prints a shell's completion script, which asks quarry
// (its hidden __complete command) for the words that may come next.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, errOut, code := cli(t, "", "completion", shell)
		if code != 0 || !strings.Contains(out, "__complete") || errOut != "" {
			t.Errorf("quarry completion %s: exit %d, stderr %q, script:\n%.300s", shell, code, errOut, out)
		}
	}
	out, _, _ := cli(t, "", "completion", "bash")
	if !strings.Contains(out, "complete -o default -F __start_quarry quarry") {
		t.Errorf("the bash script does not complete quarry:\n%.300s", out)
	}
	out, _, code := cli(t, "", "__complete", "ind")
	if code != 0 || !strings.Contains(out, "index\tcreate, list, show or remove indexes") || !strings.Contains(out, "indexer\t") {
		t.Errorf("quarry __complete ind: exit %d\n%s", code, out)
	}
	out, _, _ = cli(t, "", "__complete", "--nats", "nats://127.0.0.1:4222", "sea")
	if !strings.Contains(out, "search\t") {
		t.Errorf("quarry __complete --nats URL sea:\n%s", out)
	}
}

// A flag written with one dash, as Go's flag package took it, is refused
// with the fix.
func TestSingleDashFlag(t *testing.T) {
	t.Parallel()
	_, errOut, code := cli(t, "", "version", "-json")
	if code != exitUsage || !strings.Contains(errOut, "takes two dashes: --json") {
		t.Errorf("quarry version -json: exit %d\n%s", code, errOut)
	}
	_, errOut, code = cli(t, "", "-nats", "nats://127.0.0.1:1", "version")
	if code != exitUsage || !strings.Contains(errOut, "takes two dashes: --nats") {
		t.Errorf("quarry -nats URL version: exit %d\n%s", code, errOut)
	}
}
