//go:build !unix

package node

import "os"

// flock is a no-op where advisory locks are not available: Quarry's
// supported platforms are Unix; elsewhere nothing stops two processes from
// sharing a data directory.
func flock(*os.File) error { return nil }
