//go:build unix

package httpapi

import (
	"fmt"
	"syscall"
)

// RaiseFileLimit raises the process's soft limit on open files
// (RLIMIT_NOFILE) to its hard limit when it is lower, and returns the
// soft limit it leaves and whether it raised it. Go's runtime already
// does the same at start on Linux and macOS (since Go 1.19), quietly, so
// this mostly reads the limit; it raises it where that did not happen.
// A limit it cannot read is an error; one it cannot raise is not: the
// limit it has is returned.
func RaiseFileLimit() (limit uint64, raised bool, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false, fmt.Errorf("read the open-file limit: %w", err)
	}
	if uint64(lim.Cur) < uint64(lim.Max) {
		want := lim
		want.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			raised = true
		}
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, false, fmt.Errorf("read the open-file limit: %w", err)
		}
	}
	return uint64(lim.Cur), raised, nil
}
