//go:build long

package wasmtest

// defaultMode is ModeEnv's value when it is unset: the long tier, which
// has every toolchain, checks every prebuilt module against its source.
const defaultMode = "check"
