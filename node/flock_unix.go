//go:build unix

package node

import (
	"os"
	"syscall"
)

// flock takes an exclusive advisory lock on f without waiting.
func flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
