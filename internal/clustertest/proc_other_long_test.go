//go:build !linux && long

package clustertest

import "os/exec"

// dieWithTest does nothing here: only Linux kills a child with its parent.
func dieWithTest(*exec.Cmd) {}
