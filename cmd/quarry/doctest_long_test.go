//go:build long

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// TestDocs runs the command blocks of each file of docTestFiles, in
// order, as a reader would type them (doctest_test.go says how a block is
// read and annotated). Each file gets:
//
//   - bash, one process per block, with "set -euo pipefail" and every
//     variable exported; the variables and the directory a block leaves
//     are the next block's, as in one terminal;
//   - a fresh HOME, so quarry keeps its data in the default place under
//     it, and the built quarry first on PATH (the Go caches and settings
//     stay the user's);
//   - a working directory that holds the repository's top-level entries
//     (linked), as the docs' paths are from the root;
//   - free ports: `quarry serve` gets --nats-port and --http (the flags
//     the README names), QUARRY_NATS points the CLI at the NATS one, and
//     :7700, :4222 and :9464 in commands are the free ports; /tmp/ in
//     commands is a temporary directory of the file's own;
//   - `go run ./cmd/quarry` is the built quarry (TestREADMEAsWritten runs
//     the README's go run from a clone);
//   - curl that fails on an HTTP error status (a ~/.curlrc with
//     --fail-with-body, --silent and --show-error): a block that expects
//     one says "exit 22", and a console block shows the body without the
//     line curl adds ("curl: (22) …").
//
// The files' own blocks start the servers they use (`quarry serve
// --demo`, annotated background).
func TestDocs(t *testing.T) {
	bin := quarryBin(t)
	goenv := strings.Fields(runProgram(t, ".", "go", "env", "GOENV", "GOCACHE", "GOMODCACHE", "GOPATH"))
	if len(goenv) != 4 {
		t.Fatalf("go env: %q", goenv)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range docTestFiles {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".md"), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := parseDocBlocks(string(raw))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			r := newDocRun(t, f, root, bin, goenv)
			start := time.Now()
			for _, b := range blocks {
				r.block(b)
			}
			r.stopBackground()
			t.Logf("%s: %d blocks in %s", f, len(blocks), time.Since(start).Round(time.Millisecond))
		})
	}
}

// A docRun runs one file's blocks.
type docRun struct {
	t       *testing.T
	file    string
	dir     string            // where the first block starts
	env     []string          // the blocks' environment
	state   string            // the variables and directory a block leaves to the next
	ports   *strings.Replacer // the ports and /tmp/, in commands and in the output shown
	rewrite *strings.Replacer // those and quarry serve's flags, in commands
	bg      []*docBackground
}

// A docBackground is a block left running.
type docBackground struct {
	b    docBlock
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// newDocRun makes the fresh HOME, the working directory, the ports and
// the environment of one file's run.
func newDocRun(t *testing.T, file, root, bin string, goenv []string) *docRun {
	t.Helper()
	home, dir, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".curlrc"), []byte("fail-with-body\nsilent\nshow-error\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	natsPort, httpPort, metricsPort := natstest.FreePort(t), natstest.FreePort(t), natstest.FreePort(t)
	r := &docRun{t: t, file: file, dir: dir, state: filepath.Join(tmp, "doctest-state.sh")}
	ports := []string{
		":7700", fmt.Sprintf(":%d", httpPort),
		":4222", fmt.Sprintf(":%d", natsPort),
		":9464", fmt.Sprintf(":%d", metricsPort),
		"/tmp/", tmp + "/",
	}
	serve := fmt.Sprintf("quarry serve --nats-port %d --http 127.0.0.1:%d", natsPort, httpPort)
	r.ports = strings.NewReplacer(ports...)
	r.rewrite = strings.NewReplacer(append([]string{
		"go run ./cmd/quarry serve", serve,
		"quarry serve", serve,
		"go run ./cmd/quarry", "quarry",
	}, ports...)...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "PATH" || k == "TMPDIR" || strings.HasPrefix(k, "XDG_") || strings.HasPrefix(k, "QUARRY_") {
			continue
		}
		r.env = append(r.env, kv)
	}
	r.env = append(r.env, "HOME="+home, "TMPDIR="+tmp,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		fmt.Sprintf("QUARRY_NATS=nats://127.0.0.1:%d", natsPort),
		"GOENV="+goenv[0], "GOCACHE="+goenv[1], "GOMODCACHE="+goenv[2], "GOPATH="+goenv[3])
	if err := os.WriteFile(r.state, []byte("cd "+dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, bg := range r.bg {
			syscall.Kill(-bg.cmd.Process.Pid, syscall.SIGKILL)
			<-bg.done
		}
	})
	return r
}

// block runs one block and checks what it did.
func (r *docRun) block(b docBlock) {
	r.t.Helper()
	where := fmt.Sprintf("%s:%d", r.file, b.Line)
	if b.Skip != "" {
		r.t.Logf("%s: skipped: %s", where, b.Skip)
		return
	}
	if b.Stop {
		r.stopBackground()
	}
	code := r.rewrite.Replace(b.Code)
	if b.Background {
		r.startBackground(where, b, code)
		return
	}
	start := time.Now()
	out, exit := r.run(code)
	r.t.Logf("%s: exit %d in %s", where, exit, time.Since(start).Round(time.Millisecond))
	if testing.Verbose() {
		r.t.Logf("%s\n--- output (its last lines):\n%s", code, tail(out))
	}
	var wrong []string
	if exit != b.Exit {
		wrong = append(wrong, fmt.Sprintf("exit status %d, want %d", exit, b.Exit))
	}
	for _, s := range b.Contains {
		if !strings.Contains(out, s) {
			wrong = append(wrong, fmt.Sprintf("the output does not contain %q", s))
		}
	}
	for _, s := range b.Lacks {
		if strings.Contains(out, s) {
			wrong = append(wrong, fmt.Sprintf("the output contains %q", s))
		}
	}
	if b.Lang == "console" {
		if shown := r.ports.Replace(b.Output); !outputMatches(shown, curlFailRe.ReplaceAllString(out, "")) {
			wrong = append(wrong, fmt.Sprintf("the output is not what the doc shows:\n%s", shown))
		}
	}
	if wrong != nil {
		r.t.Errorf("%s: %s\n%s\n--- output:\n%s", where, code, strings.Join(wrong, "\n"), out)
	}
}

// curlFailRe matches the line curl prints for --fail-with-body, which a
// reader's curl does not: the output shown is compared without it.
var curlFailRe = regexp.MustCompile(`(?m)^curl: \(22\) The requested URL returned error: \d+\n`)

// script is the bash script of a block: the state the last block left,
// the block, and (unless it runs in the background) its own state saved
// for the next block.
func (r *docRun) script(code string, save bool) string {
	s := "set -euo pipefail -a\nsource " + r.state + "\n"
	if save {
		s += "trap '{ export -p | grep -v \"^declare -[a-z]*r\"; printf \"cd %q\\n\" \"$PWD\"; } > " + r.state + "' EXIT\n"
	}
	return s + code + "\n"
}

// command is bash running script in a process group of its own, so that
// the group can be interrupted or killed whole.
func (r *docRun) command(ctx context.Context, script string, out *lockedBuffer) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs a block in the foreground, for at most 2 minutes, and returns
// its output and exit status; what it left running is killed.
func (r *docRun) run(code string) (string, int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out lockedBuffer
	cmd := r.command(ctx, r.script(code, true), &out)
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		return out.String() + "\n(killed: still running after 2 minutes)", -1
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return out.String(), 0
}

// startBackground starts a block and waits until its output holds each
// text of its "output contains".
func (r *docRun) startBackground(where string, b docBlock, code string) {
	r.t.Helper()
	bg := &docBackground{b: b, out: &lockedBuffer{}, done: make(chan struct{})}
	bg.cmd = r.command(context.Background(), r.script(code, false), bg.out)
	if err := bg.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() { bg.cmd.Wait(); close(bg.done) }()
	r.bg = append(r.bg, bg)
	start := time.Now()
	ready := func() bool {
		for _, s := range b.Contains {
			if !strings.Contains(bg.out.String(), s) {
				return false
			}
		}
		return true
	}
	testwait.Until(r.t, 3*time.Minute, where+": "+code+": its output to hold "+fmt.Sprintf("%q", b.Contains), func() bool {
		select {
		case <-bg.done:
			return true
		default:
			return ready()
		}
	})
	select {
	case <-bg.done:
		r.t.Fatalf("%s: %s: ended (exit %d) instead of running in the background:\n%s", where, code, bg.cmd.ProcessState.ExitCode(), bg.out)
	default:
	}
	r.t.Logf("%s: in the background, ready in %s", where, time.Since(start).Round(time.Millisecond))
}

// stopBackground interrupts what runs in the background (SIGINT, Ctrl-C)
// and checks that each ends with its exit status.
func (r *docRun) stopBackground() {
	r.t.Helper()
	for _, bg := range r.bg {
		syscall.Kill(-bg.cmd.Process.Pid, syscall.SIGINT)
	}
	for _, bg := range r.bg {
		where := fmt.Sprintf("%s:%d", r.file, bg.b.Line)
		select {
		case <-bg.done:
		case <-time.After(time.Minute):
			syscall.Kill(-bg.cmd.Process.Pid, syscall.SIGKILL)
			<-bg.done
			r.t.Errorf("%s: still running a minute after Ctrl-C:\n%s", where, tail(bg.out.String()))
			continue
		}
		if exit := bg.cmd.ProcessState.ExitCode(); exit != bg.b.Exit {
			r.t.Errorf("%s: exit status %d after Ctrl-C, want %d:\n%s", where, exit, bg.b.Exit, tail(bg.out.String()))
		}
		syscall.Kill(-bg.cmd.Process.Pid, syscall.SIGKILL)
	}
	r.bg = nil
}
