package plugins

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quarrysearch/quarry/sdk/abi"
)

// NativeHandler is a plugin's byte-level entry point run in-process: it
// takes an encoded request (package sdk/abi) and appends the encoded
// response to out. It is what the WebAssembly export runs inside the
// guest: the HandleRewrite or HandleRank method of an sdk.Hooks. A handler
// serves one call at a time.
type NativeHandler func(in, out []byte) []byte

// NativeFactory makes the handler of one instance of a native plugin from
// the plugin's configuration (Spec.Config). Natively, sdk.Config is one
// value for the whole process, so a native plugin's logic takes its
// configuration from here instead (examples/plugins/lib/*: Hooks).
type NativeFactory func(config []byte) (NativeHandler, error)

// nativeInstance is one handler and the buffers its calls reuse, as a
// WebAssembly instance reuses its request buffer.
type nativeInstance struct {
	handle   NativeHandler
	factory  NativeFactory // makes a new handler after a panic
	req, out []byte
}

// LoadNative makes a Plugin that runs Go code in-process instead of a
// WebAssembly module, for measuring what WebAssembly costs side by side:
// the same logic through the same encoding, pool of Spec.Instances
// instances (one handler each, from factory), output cap, error kinds and
// metrics as Load's plugins, and it satisfies the broker like them. Only
// the budget differs: Go code cannot be stopped mid-call, so a call that
// overruns its budget runs to the end, then fails with KindTimeout (as a
// WebAssembly call stopped at its budget does). Native plugins take no
// memory limit and no share of a runtime's instances; they are for
// benchmarks and tests of trusted code, not for teams' uploads.
func LoadNative(spec Spec, factory NativeFactory) (*Plugin, error) {
	if err := spec.validate(); err != nil { // the defaults of Load
		return nil, err
	}
	if factory == nil {
		return nil, fmt.Errorf("plugin %s: no native factory", spec.Name)
	}
	p := &Plugin{spec: spec, native: make(chan *nativeInstance, spec.Instances)}
	for range spec.Instances {
		h, err := factory(spec.Config)
		if err == nil && h == nil {
			err = errors.New("the factory returned no handler")
		}
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w: %v", spec.Name, ErrInit, err)
		}
		p.native <- &nativeInstance{handle: h, factory: factory}
	}
	return p, nil
}

// callNative is call for a native plugin: encode, run the handler,
// decode, with call's error kinds.
func (p *Plugin) callNative(ctx context.Context, encode func([]byte) []byte, decode func([]byte) error) (err error) {
	var in *nativeInstance
	select {
	case in = <-p.native:
	case <-ctx.Done():
		return &CallError{Plugin: p.spec.Name, Kind: KindBusy, Err: fmt.Errorf("no free instance within the budget of %s", p.spec.Budget)}
	}
	defer func() { p.native <- in }()
	in.req = encode(in.req[:0])
	out, perr := runNative(in.handle, in.req, in.out[:0])
	if perr != nil {
		// As a trapped WebAssembly instance is discarded: a new handler,
		// if the factory makes one.
		if h, err := in.factory(p.spec.Config); err == nil && h != nil {
			in.handle, in.req, in.out = h, nil, nil
		}
		return &CallError{Plugin: p.spec.Name, Kind: KindTrap, Err: perr}
	}
	in.out = out
	if d, ok := ctx.Deadline(); ctx.Err() != nil || ok && !time.Now().Before(d) { // the context's timer may fire late on a busy machine

		return &CallError{Plugin: p.spec.Name, Kind: KindTimeout, Err: fmt.Errorf("budget of %s exceeded", p.spec.Budget)}
	}
	if len(out) > p.spec.MaxOutput {
		return &CallError{Plugin: p.spec.Name, Kind: KindOutput, Err: fmt.Errorf("%d bytes, over the cap of %d", len(out), p.spec.MaxOutput)}
	}
	if err := decode(out); err != nil {
		var ge *abi.GuestError
		if errors.As(err, &ge) {
			return &CallError{Plugin: p.spec.Name, Kind: KindPlugin, Err: errors.New(ge.Message)}
		}
		return &CallError{Plugin: p.spec.Name, Kind: KindMalformed, Err: err}
	}
	return nil
}

// runNative runs a handler, turning a panic (a trap, in WebAssembly terms)
// into an error. The sdk's hooks recover their own panics already; this
// catches the rest.
func runNative(h NativeHandler, in, out []byte) (res []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("native plugin panicked: %v", r)
		}
	}()
	return h(in, out), nil
}
