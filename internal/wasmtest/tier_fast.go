//go:build !long

package wasmtest

// defaultMode is ModeEnv's value when it is unset: the fast tier uses the
// prebuilt modules as they are.
const defaultMode = ""
