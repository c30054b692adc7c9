package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command of the tree has a one-line summary, and its --help,
// generated from the tree, exits 0 and shows its usage.
func TestHelp(t *testing.T) {
	t.Parallel()
	// help runs quarry with args, with no quarry-bench to find (bench
	// --help would run its --help).
	help := func(args ...string) (string, string, int) {
		e, stdout, stderr := testEnv("", nil)
		e.lookPath = func(string) (string, error) { return "", exec.ErrNotFound }
		code := runIn(t, e, args...)
		return stdout.String(), stderr.String(), code
	}
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
		seen++
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		out, errOut, code := help(args...)
		if code != 0 || !strings.Contains(out, "Usage:\n  "+c.CommandPath()) || errOut != "" {
			t.Errorf("quarry %s: exit %d, stdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	walk(e.newRoot(&started))
	if seen < 60 {
		t.Fatalf("only %d commands' help seen", seen)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"Usage:\n  quarry COMMAND", "Indexes and documents:\n", "\n  index            create, list, show or remove indexes\n", "Connection flags (before or after the command):\n      --creds string"}},
		{[]string{"--help"}, []string{"Usage:\n  quarry COMMAND", "\n  search           search an index\n"}},
		{[]string{"help", "index"}, []string{"Usage:\n  quarry index COMMAND", "\n  create    create an index", "      --nats string"}},
		{[]string{"index", "--help"}, []string{"Usage:\n  quarry index COMMAND", "\n  rm        delete an index"}},
		{[]string{"index", "create", "--help"}, []string{"Creates an index.", "Usage:\n  quarry index create NAME [flags]", "      --shards int ", "Connection flags (before or after the command):\n"}},
		{[]string{"help", "index", "create"}, []string{"Usage:\n  quarry index create NAME [flags]"}},
		{[]string{"index", "ls", "-h"}, []string{"Aliases:\n  ls, list", "      --json "}},
		// A command that connects to no NATS lists no connection flags.
		{[]string{"serve", "--help"}, []string{"Usage:\n  quarry serve [flags]", "      --demo "}},
	} {
		out, errOut, code := help(c.args...)
		for _, w := range c.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("quarry %s: exit %d, want %q in its output:\n%s%s", strings.Join(c.args, " "), code, w, out, errOut)
			}
		}
	}
	if out, _, _ := help("serve", "--help"); strings.Contains(out, "--nats string") || strings.Contains(out, "Connection flags") {
		t.Errorf("quarry serve --help lists the connection flags:\n%s", out)
	}
	// Without a command: the usage, on stderr, and exit status 2; with a
	// group but no sub-command, the group's.
	for _, args := range [][]string{nil, {"index"}} {
		out, errOut, code := help(args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "Usage:\n  quarry ") {
			t.Errorf("quarry %s: exit %d, stdout %q, stderr:\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	// The help of a command that does not exist is bad use, not help.
	for _, args := range [][]string{{"help", "nosuch"}, {"help", "index", "nosuch"}} {
		out, errOut, code := help(args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "quarry help: no command") {
			t.Errorf("quarry %s: exit %d, stdout %q, stderr:\n%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	// bench's flags are quarry-bench's; without it, its help is its own.
	if out, _, code := help("bench", "--help"); code != 0 || !strings.Contains(out, "quarry-bench") {
		t.Errorf("quarry bench --help without quarry-bench: exit %d\n%s", code, out)
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
