//go:build linux && long

package clustertest

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the child get SIGKILL if the test process dies first
// (a timeout's panic), so no member or role outlives the test.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
