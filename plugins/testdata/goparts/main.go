// Command goparts is a benchmark plugin: exports that each do one part of
// what a Go guest's call does, called straight through wazero by
// BenchmarkGoEntry to see what a call's time is made of.
package main

import (
	"fmt"

	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/sdk/abi"
)

func init() {
	sdk.Rewriter(func(*sdk.RewriteRequest) error { return nil })
}

var sink string
var req = abi.AppendRewriteRequest(nil, &abi.RewriteRequest{Q: "pop and chips", Size: 10})

// A string allocated (the request's text).
//
//go:wasmexport part_alloc
func partAlloc() { sink = string(req[:13]) }

// A closure called under a deferred recover, as the SDK calls a hook.
//
//go:wasmexport part_defer
func partDefer() { _ = call(func() error { return nil }) }

// A rewrite request decoded.
//
//go:wasmexport part_decode
func partDecode() {
	var r abi.RewriteRequest
	_ = abi.DecodeRewriteRequest(req, &r)
}

func call(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("plugin panicked: %v", p)
		}
	}()
	return f()
}

func main() {}
