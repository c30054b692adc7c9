//go:build !unix

package loadgen

import "time"

// ProcessCPU returns 0: the process's CPU time is read on Unix only.
func ProcessCPU() time.Duration { return 0 }
