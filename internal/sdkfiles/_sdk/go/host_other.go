//go:build !wasip1

package sdk

import "log"

// nativeConfig is the configuration Config returns when running natively
// (set by sdktest).
var nativeConfig []byte

// Log writes a message; natively, to the standard logger.
func Log(msg string) { log.Print(msg) }

// Config returns the plugin's configuration; natively, what
// SetNativeConfig gave.
func Config() []byte { return nativeConfig }

// SetNativeConfig sets what Config returns in native builds (tests). It is
// not available in wasm builds, where the host provides the configuration.
func SetNativeConfig(b []byte) { nativeConfig = b }
