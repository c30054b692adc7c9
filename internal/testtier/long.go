//go:build long

package testtier

// Long reports the long tier (built with -tags long).
const Long = true
