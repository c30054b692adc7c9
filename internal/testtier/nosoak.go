//go:build !soak

package testtier

// Soak reports the soak variants (built with -tags long,soak): the long
// tier's tests run longer (more queries, more documents, more seeds,
// every member killed in turn) and hold the tighter bounds, for figures
// on a quiet machine. CI does not run them.
const Soak = false
