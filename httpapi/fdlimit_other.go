//go:build !unix

package httpapi

// RaiseFileLimit reports no limit (0) where open files have no
// RLIMIT_NOFILE: the HTTP connection cap is then the configured one.
func RaiseFileLimit() (limit uint64, raised bool, err error) { return 0, false, nil }
