//go:build long

package main

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/quarrysearch/quarry/internal/natstest"
)

// A data directory held by a searcher process is refused to another
// searcher, naming the process; once that process is killed with -9 the
// directory is free at once: the kernel drops the lock of a dead process,
// no stale lock file to remove. (TestDataDirLocked runs both searchers in
// the test's process.)
func TestDataDirLockedKill9(t *testing.T) {
	s := natstest.Start(t)
	dir := t.TempDir()
	if out, errOut, code := cli(t, "", "init", "--nats", s.ClientURL(), "--replicas", "1"); code != 0 { // the roles make no resources
		t.Fatalf("quarry init: %d %s %s", code, out, errOut)
	}
	args := []string{"searcher", "--nats", s.ClientURL(), "--data", dir}
	first := startRole(t, args...)
	first.waitStarted()
	_, errOut, code := cli(t, "", args...)
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	oneLine(t, errOut, "data directory "+dir+" is in use by quarry searcher", fmt.Sprintf("pid %d", first.cmd.Process.Pid), "change --data")
	if err := first.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the first searcher died: %v", err)
	}
	first.kill()
	startRole(t, args...).waitStarted()
}
