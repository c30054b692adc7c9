package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/trace"
	"github.com/quarrysearch/quarry/plugins/internal/preempt"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// export is the guest function a plugin of kind is called through.
func export(k Kind) string {
	if k == Ranker {
		return abi.ExportRank
	}
	return abi.ExportRewrite
}

// Defaults of a Spec's zero fields.
const (
	// DefaultBudget bounds one call.
	DefaultBudget = 50 * time.Millisecond
	// DefaultMaxOutput caps a response's size.
	DefaultMaxOutput = 1 << 20
	// DefaultInstances is a plugin's pool size.
	DefaultInstances = 4
	// DefaultInitBudget bounds one instance's start.
	DefaultInitBudget = 5 * time.Second
)

// Spec is a plugin version and how to run it.
type Spec struct {
	// Name and Version identify the plugin in logs, errors and metrics.
	Name, Version string
	Kind          Kind
	// Config is the plugin's own configuration (JSON), returned by the
	// config host function.
	Config []byte
	// Budget bounds one call (default DefaultBudget).
	Budget time.Duration
	// MaxOutput caps a response's size (default DefaultMaxOutput).
	MaxOutput int
	// Instances is the size of the plugin's pool of instances (default
	// DefaultInstances): Config.WarmInstances of them are made when it
	// loads, the others when calls first find every made one busy.
	Instances int
	// InitBudget bounds one instance's start (default DefaultInitBudget).
	InitBudget time.Duration
}

// Plugin is a loaded plugin version with its pool of warm instances.
type Plugin struct {
	spec     Spec
	rt       *Runtime
	compiled wazero.CompiledModule
	// pool holds the made instances that are free; cold holds a token for
	// each slot of the pool with no instance yet (not made yet, or
	// discarded). A call takes a made instance when there is one, so
	// slots are only filled when calls overlap.
	pool   chan *instance
	cold   chan struct{}
	log    *slog.Logger
	seed   uint64
	closed atomic.Bool
	// native, set by LoadNative, holds the instances of a plugin run in
	// Go rather than WebAssembly (see native.go).
	native chan *nativeInstance
	// live and memBytes count the instances alive and their linear
	// memory, as of each instance's last return to the pool.
	live, memBytes atomic.Int64
	// instances are the live instances, free or in a call, for
	// StopCalls; changed when an instance is made or closed, not per call.
	mu        sync.Mutex
	instances map[*instance]struct{}

	Metrics Metrics
}

type instance struct {
	mod   api.Module
	alloc api.Function
	hook  api.Function
	// stack holds a call's parameters and results (CallWithStack): two
	// words, the most any export of the ABI takes or returns, so a call
	// allocates nothing.
	stack []uint64
	// buf and bufLen: the last buffer quarry_alloc returned and its size,
	// reused for every request that fits (one call into the guest, not
	// two).
	buf, bufLen uint32
	req         []byte // the encoded request, reused
	mem         uint32 // memory size counted in Plugin.memBytes
	// interrupt, when the module is instrumented (see preempt), makes
	// the instance trap at its next function call or loop iteration
	// once set; nil under Config.CloseOnContextDone.
	interrupt api.MutableGlobal
	timer     *time.Timer // sets interrupt; stopped between calls
	// poisoned: an interrupt was set; the instance must not be reused.
	poisoned bool
	// state is idle, running (between arm and disarm) or stopped (by
	// StopCalls while running): what another goroutine may stop.
	state atomic.Int32
	// guest is what host functions know of the instance (modules).
	guest *guest
	// stdout and stderr are the instance's own, so a line names the
	// request of the call that wrote it.
	stdout, stderr *lineLogger
}

// arm makes the instance trap once left has passed (what is left of the
// call's budget, or of its caller's deadline if sooner, as of the call's
// start: the microseconds since are not worth reading the clock again);
// disarm, called once the guest has returned, marks the instance
// poisoned if the interrupt fired. Under Config.CloseOnContextDone wazero
// does this itself. One timer per instance, reset per call: nothing is
// allocated.
func (in *instance) arm(left time.Duration) {
	in.state.Store(running)
	if in.timer != nil {
		in.timer.Reset(left)
	}
}

func (in *instance) disarm() {
	if in.timer != nil && !in.timer.Stop() {
		in.poisoned = true
	}
	if !in.state.CompareAndSwap(running, idle) { // stopped (StopCalls)
		in.poisoned = true
	}
}

// Instance states (instance.state).
const (
	idle int32 = iota
	running
	stopped
)

// stop interrupts the instance's call, if it is in one: the call fails at
// its next function call or loop iteration and the instance is discarded.
// An idle instance is left alone.
func (in *instance) stop() {
	if !in.state.CompareAndSwap(running, stopped) {
		return
	}
	if in.timer != nil {
		// The interrupt, set by the timer's own function; unless it has
		// fired already (the budget is spent): then it is set, or being.
		if in.timer.Stop() {
			in.timer.Reset(0)
		}
		return
	}
	// Under Config.CloseOnContextDone, closing the module ends the call.
	in.mod.CloseWithExitCode(context.Background(), 1)
}

// validate checks a spec's kind and fills in its defaults.
func (s *Spec) validate() error {
	if err := s.Kind.Check(); err != nil {
		return fmt.Errorf("plugin %s: %w", s.Name, err)
	}
	if s.Budget <= 0 {
		s.Budget = DefaultBudget
	}
	if s.MaxOutput <= 0 {
		s.MaxOutput = DefaultMaxOutput
	}
	if s.Instances <= 0 {
		s.Instances = DefaultInstances
	}
	if s.InitBudget <= 0 {
		s.InitBudget = DefaultInitBudget
	}
	return nil
}

// Load compiles, checks and warms a plugin. Errors wrap ErrNotWasm,
// ErrMemoryLimit, ErrABIVersion, ErrMissingExport, ErrForbiddenImport,
// ErrInit or ErrLimit and name what is wrong. A module that declares more
// memory at most than the runtime allows is capped, not refused: growing
// past the limit fails the call.
func (r *Runtime) Load(ctx context.Context, spec Spec, wasm []byte) (*Plugin, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if spec.Budget > r.cfg.MaxBudget {
		return nil, fmt.Errorf("plugin %s: %w: a budget of %s is over the maximum of %s", spec.Name, ErrLimit, spec.Budget, r.cfg.MaxBudget)
	}
	if err := r.reserve(spec.Name, spec.Instances); err != nil {
		return nil, err
	}
	cm, err := r.compile(ctx, wasm)
	if err != nil {
		r.release(spec.Instances)
		return nil, fmt.Errorf("plugin %s: %w", spec.Name, err)
	}
	if err := check(cm, spec.Kind); err != nil {
		r.release(spec.Instances)
		cm.Close(ctx)
		return nil, fmt.Errorf("plugin %s: %w", spec.Name, err)
	}
	log := r.cfg.Logger.With("plugin", spec.Name, "version", spec.Version)
	p := &Plugin{spec: spec, rt: r, compiled: cm, pool: make(chan *instance, spec.Instances), cold: make(chan struct{}, spec.Instances), log: log,
		seed: seedOf(spec.Name + "@" + spec.Version)}
	warm := min(spec.Instances, r.cfg.WarmInstances)
	for range warm {
		in, err := p.newInstance(ctx)
		if err != nil {
			p.Close(ctx)
			return nil, fmt.Errorf("plugin %s: %w", spec.Name, err)
		}
		p.pool <- in
	}
	for range spec.Instances - warm {
		p.cold <- struct{}{}
	}
	return p, nil
}

// compile checks wasm against the runtime's compile limits, instruments
// it (unless CloseOnContextDone) and compiles it, on one of the
// runtime's CompileWorkers (a team's compiles take turns; other teams'
// runtimes have workers of their own) and within CompileTimeout. Errors
// wrap ErrCompileLimit, ErrMemoryLimit, ErrNotWasm or ctx's error.
func (r *Runtime) compile(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
	// Instrumenting reads every instruction and checks the compile limits
	// on the way; under CloseOnContextDone it runs for the limits alone.
	instrumented, err := preempt.Instrument(wasm, preempt.Limits(r.cfg.Compile))
	switch {
	case errors.Is(err, preempt.ErrLimit):
		return nil, fmt.Errorf("%w: %v (quarry serve --plugin-compile-limits)", ErrCompileLimit, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrNotWasm, err)
	case !r.cfg.CloseOnContextDone:
		wasm = instrumented
	}
	select { // a free worker first, whatever ctx says (select picks at random)
	case r.compiling <- struct{}{}:
	default:
		select {
		case r.compiling <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a compile worker (%d busy): %w", cap(r.compiling), context.Cause(ctx))
		}
	}
	defer func() { <-r.compiling }()
	cctx, cancel := context.WithTimeoutCause(ctx, r.cfg.CompileTimeout, errCompileTimeout)
	defer cancel()
	// Two workers: wazero then checks the context between functions (one
	// worker never does), so a compile stops at its deadline or on a
	// signal; the compile limits bound each function's time.
	cctx = experimental.WithCompilationWorkers(cctx, 2)
	start := time.Now()
	cm, err := r.rt.CompileModule(cctx, wasm)
	switch {
	case err == nil:
		return cm, nil
	case context.Cause(cctx) == errCompileTimeout:
		return nil, fmt.Errorf("%w: compiling took over %s (quarry serve --plugin-compile-timeout)", ErrCompileLimit, r.cfg.CompileTimeout)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("compile stopped after %s: %w", time.Since(start).Round(time.Millisecond), context.Cause(ctx))
	case strings.Contains(err.Error(), "over limit of"): // wazero's check of the declared minimum
		return nil, fmt.Errorf("%w: %v (each instance may have %d pages of 64 KiB)", ErrMemoryLimit, err, r.cfg.MemoryLimitPages)
	}
	return nil, fmt.Errorf("%w: %v", ErrNotWasm, err)
}

// errCompileTimeout is the cause of a compile's context at
// Config.CompileTimeout.
var errCompileTimeout = errors.New("compile timeout")

func seedOf(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Spec returns the plugin's spec.
func (p *Plugin) Spec() Spec { return p.spec }

// newInstance instantiates the module and runs its initializer, with a
// virtual clock, seeded randomness and no file system or environment.
func (p *Plugin) newInstance(ctx context.Context) (*instance, error) {
	ctx, cancel := context.WithTimeout(ctx, p.spec.InitBudget)
	defer cancel()
	g := &guest{p: p}
	stdout, stderr := &lineLogger{p: p, g: g, source: "stdout"}, &lineLogger{p: p, g: g, source: "stderr"}
	mc := wazero.NewModuleConfig().WithName("").WithStartFunctions().
		WithStdout(stdout).WithStderr(stderr).
		WithRandSource(rand.NewChaCha8(seed32(p.seed)))
	mod, err := p.rt.rt.InstantiateModule(ctx, p.compiled, mc)
	if err != nil && ctx.Err() != nil { // under CloseOnContextDone, the start function ran out of time
		return nil, fmt.Errorf("%w: start function: budget of %s exceeded", ErrInit, p.spec.InitBudget)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: instantiate: %v", ErrInit, err)
	}
	if memoryOf(mod) == nil {
		mod.Close(context.Background())
		return nil, fmt.Errorf("%w: a plugin must define a memory (requests and responses go in its first memory)", ErrMissingExport)
	}
	in := &instance{mod: mod, alloc: mod.ExportedFunction(abi.ExportAlloc), hook: mod.ExportedFunction(export(p.spec.Kind)),
		stack: make([]uint64, 2), stdout: stdout, stderr: stderr, guest: g}
	if !p.rt.cfg.CloseOnContextDone {
		g, ok := mod.ExportedGlobal(preempt.Export).(api.MutableGlobal)
		if !ok {
			mod.Close(context.Background())
			return nil, fmt.Errorf("%w: the instrumented module has no %s global", ErrInit, preempt.Export)
		}
		in.interrupt = g
		in.timer = time.AfterFunc(time.Hour, func() { g.Set(1) })
		in.timer.Stop()
	}
	modules.Store(mod, in.guest) // before the initializer, which may read its config
	// The module's start function (exported by the instrumentation, which
	// moves it out of instantiation so that it can be interrupted), then
	// a reactor's _initialize: both within InitBudget.
	starts := []string{preempt.StartExport, abi.ExportInitialize}
	if p.rt.cfg.CloseOnContextDone { // not instrumented: wazero ran the start function
		starts = starts[1:]
	}
	defer in.guest.endCall() // the lines the start functions dropped
	for _, name := range starts {
		if err := in.runStart(ctx, mod.ExportedFunction(name), p.spec.InitBudget); err != nil {
			mod.Close(context.Background())
			modules.Delete(mod)
			if name == preempt.StartExport {
				name = "start function"
			}
			return nil, fmt.Errorf("%w: %s: %v", ErrInit, name, err)
		}
	}
	p.live.Add(1)
	p.noteMemory(in)
	p.mu.Lock()
	if p.instances == nil {
		p.instances = map[*instance]struct{}{}
	}
	p.instances[in] = struct{}{}
	p.mu.Unlock()
	return in, nil
}

// runStart calls fn, an instance's start function or _initialize (nil:
// none), within ctx's deadline, which budget set.
func (in *instance) runStart(ctx context.Context, fn api.Function, budget time.Duration) error {
	if fn == nil {
		return nil
	}
	deadline, _ := ctx.Deadline() // budget's, or sooner
	in.arm(time.Until(deadline))
	_, err := fn.Call(ctx)
	in.disarm()
	switch {
	case in.poisoned, err != nil && ctx.Err() != nil:
		return fmt.Errorf("budget of %s exceeded", budget)
	case err != nil:
		return err
	}
	return nil
}

// memoryOf returns a module's memory, or nil if it defines none (wazero
// then returns a typed nil, which must not be called).
func memoryOf(m api.Module) api.Memory {
	mem := m.Memory()
	if mem == nil {
		return nil
	}
	if v := reflect.ValueOf(mem); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return mem
}

// noteMemory updates memBytes with an instance's memory size. Call it only
// while the instance is not running (its memory may grow).
func (p *Plugin) noteMemory(in *instance) {
	var size uint32
	if mem := memoryOf(in.mod); mem != nil {
		size = mem.Size()
	}
	if size != in.mem {
		p.memBytes.Add(int64(size) - int64(in.mem))
		in.mem = size
	}
}

// closeInstance closes an instance and stops counting it.
func (p *Plugin) closeInstance(ctx context.Context, in *instance) {
	if in.timer != nil {
		in.timer.Stop()
	}
	p.mu.Lock()
	delete(p.instances, in)
	p.mu.Unlock()
	in.mod.Close(ctx)
	modules.Delete(in.mod)
	p.live.Add(-1)
	p.memBytes.Add(-int64(in.mem))
}

// LiveInstances reports the plugin's instantiated instances (at most
// Spec.Instances; fewer while discarded ones are not yet replaced).
func (p *Plugin) LiveInstances() int64 { return p.live.Load() }

// MemoryBytes reports the linear memory of the plugin's live instances,
// as of each one's last call.
func (p *Plugin) MemoryBytes() int64 { return p.memBytes.Load() }

func seed32(s uint64) [32]byte {
	var b [32]byte
	for i := range 4 {
		for j := range 8 {
			b[i*8+j] = byte(s >> (8 * j))
		}
		s = s*6364136223846793005 + 1442695040888963407
	}
	return b
}

// StopCalls stops the calls running now: each fails (KindStopped) at its
// next function call or loop iteration, and its instance is discarded. Calls made later run as usual. The broker
// stops the calls of a plugin that has left every pipeline, so that
// removing or replacing a plugin leaves nothing of it running.
func (p *Plugin) StopCalls() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for in := range p.instances {
		in.stop()
	}
}

// Close stops the calls in flight (StopCalls), releases every instance and
// returns them to the runtime's budget (an instance in a call is closed
// when its call returns). Closing twice is harmless.
func (p *Plugin) Close(ctx context.Context) {
	if !p.closed.CompareAndSwap(false, true) || p.native != nil {
		return
	}
	p.StopCalls()
	p.rt.release(p.spec.Instances)
	for {
		select {
		case in := <-p.pool:
			p.closeInstance(ctx, in)
		default:
			p.compiled.Close(ctx)
			return
		}
	}
}

// ErrorKind classifies a failed call.
type ErrorKind string

// Kinds of call failure.
const (
	KindTimeout   ErrorKind = "timeout"
	KindTrap      ErrorKind = "trap"
	KindMemory    ErrorKind = "memory"
	KindOutput    ErrorKind = "output_too_large"
	KindMalformed ErrorKind = "malformed_output"
	KindPlugin    ErrorKind = "plugin_error"
	KindBusy      ErrorKind = "busy"
	// KindStopped: StopCalls stopped the call (its plugin was removed,
	// replaced or closed).
	KindStopped ErrorKind = "stopped"
)

// CallError is a failed plugin call.
type CallError struct {
	Plugin string
	Kind   ErrorKind
	Err    error
}

func (e *CallError) Error() string { return fmt.Sprintf("plugin %s: %s: %v", e.Plugin, e.Kind, e.Err) }
func (e *CallError) Unwrap() error { return e.Err }

// acquire takes an instance for one call. When every pooled instance is
// busy (a burst, or calls stuck on a slow path of the plugin), the call
// does not queue behind them: it gets an extra instance for itself, within
// the team's instance budget (Config.MaxInstances), closed when it
// returns; only with the budget spent does it wait for a pooled one, until
// its own deadline. extra reports an instance outside the pool; slow, that
// the call did not find a made instance free at once (it made one, or
// waited).
func (p *Plugin) acquire(ctx context.Context, deadline time.Time) (in *instance, extra, slow bool, err error) {
	select {
	case in = <-p.pool:
		return in, false, false, nil
	default:
	}
	select {
	case <-p.cold:
		in, err = p.fillSlot()
		return in, false, true, err
	default: // the slow path: what it allocates, it may
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		if p.rt.reserve(p.spec.Name, 1) == nil {
			p.Metrics.grown.Add(1)
			if in, err = p.newInstance(ctx); err != nil {
				p.rt.release(1)
				return nil, false, true, &CallError{Plugin: p.spec.Name, Kind: KindTrap, Err: err}
			}
			return in, true, true, nil
		}
		select {
		case in = <-p.pool:
			return in, false, true, nil
		case <-p.cold:
			in, err = p.fillSlot()
			return in, false, true, err
		case <-ctx.Done():
			return nil, false, true, &CallError{Plugin: p.spec.Name, Kind: KindBusy,
				Err: fmt.Errorf("no free instance within the budget of %s, and the team's %d instances are all in use", p.spec.Budget, p.rt.cfg.MaxInstances)}
		}
	}
}

// waitCall waits for a free call of the team's runtime (Config.MaxCalls)
// until deadline: the slow path of a call that found every one taken.
func (p *Plugin) waitCall(ctx context.Context, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if p.rt.calls.wait(ctx) {
		return nil
	}
	return &CallError{Plugin: p.spec.Name, Kind: KindBusy,
		Err: fmt.Errorf("the team's %d plugin calls at once on this broker (--team-max-plugin-calls) were all running until the call's deadline", p.rt.cfg.MaxCalls)}
}

// fillSlot makes an instance for a slot of the pool that has none (its
// token taken from cold); on failure the token goes back.
func (p *Plugin) fillSlot() (*instance, error) {
	in, err := p.newInstance(context.Background())
	if err != nil {
		p.cold <- struct{}{}
		return nil, &CallError{Plugin: p.spec.Name, Kind: KindTrap, Err: err}
	}
	return in, nil
}

// call runs one hook on a pooled instance: copy the request in, call, and
// decode the response straight from the guest's memory. Any failure but a
// plugin-reported error discards the instance.
func (p *Plugin) call(ctx context.Context, encode func([]byte) []byte, decode func([]byte) error) (err error) {
	// The clock is read twice a call (it costs as much as the rest of a
	// no-op call on some machines): at the start, and at the end for the
	// latency and, from when the call got its instance, the team's busy
	// time.
	start := time.Now()
	var running time.Time // when the call got an instance; zero: never
	slotted := false      // it holds one of the team's calls (Config.MaxCalls)
	defer func() {
		if slotted {
			p.rt.calls.give()
		}
		end := time.Now()
		p.Metrics.observe(end.Sub(start), err)
		if !running.IsZero() {
			p.rt.busyNS.Add(int64(end.Sub(running)))
		}
	}()
	if trace.Enabled() {
		var span oteltrace.Span
		ctx, span = trace.Start(ctx, "quarry.plugin."+string(p.spec.Kind), oteltrace.WithAttributes(
			attribute.String("quarry.plugin", p.spec.Name), attribute.String("quarry.plugin.version", p.spec.Version)))
		defer func() {
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}()
	}
	deadline := start.Add(p.spec.Budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// The instance's own timer keeps the budget (arm); a context with a
	// deadline costs a timer and three allocations a call, so only
	// native plugins and wazero's own way get one.
	if p.native != nil || p.rt.cfg.CloseOnContextDone {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
		if p.native != nil {
			return p.callNative(ctx, encode, decode)
		}
	}
	if !deadline.After(start) {
		// The caller's time is up (earlier steps took it): no call, so no
		// timer set to fire at once.
		return &CallError{Plugin: p.spec.Name, Kind: KindTimeout, Err: errors.New("its caller's deadline had passed before it began")}
	}
	waited := false
	if slots := p.rt.calls; slots != nil {
		if !slots.take() {
			if err := p.waitCall(ctx, deadline); err != nil {
				return err
			}
			waited = true
		}
		slotted = true
	}
	in, extra, slow, err := p.acquire(ctx, deadline)
	if err != nil {
		return err
	}
	running = start
	if slow || waited {
		running = time.Now()
	}
	left := deadline.Sub(start)
	discard := true
	in.guest.beginCall()
	defer func() {
		in.guest.endCall()
		switch {
		case extra: // grown for this call only: back to the team's budget
			p.closeInstance(context.Background(), in)
			p.rt.release(1)
			return
		case discard || in.poisoned || p.closed.Load():
			p.closeInstance(context.Background(), in)
			p.cold <- struct{}{} // made again when a call needs it
		default:
			p.noteMemory(in)
			p.pool <- in
		}
	}()
	if id := requestid.From(ctx); id != in.stdout.reqID {
		in.stdout.setRequest(id)
		in.stderr.setRequest(id)
	}
	in.req = encode(in.req[:0])
	req := in.req
	if uint32(len(req)) > in.bufLen || in.bufLen == 0 {
		in.arm(left)
		in.stack[0] = uint64(max(len(req), 4096))
		err := in.alloc.CallWithStack(ctx, in.stack)
		in.disarm()
		if err == nil && in.poisoned {
			// The timer fired as the allocation returned: the budget is
			// spent, and arming it again would set the interrupt twice.
			err = errors.New("interrupted")
		}
		if err != nil {
			return p.failure(ctx, in, err, left)
		}
		in.buf, in.bufLen = uint32(in.stack[0]), uint32(max(len(req), 4096))
	}
	ptr := in.buf
	mem := in.mod.Memory()
	if !mem.Write(ptr, req) {
		return &CallError{Plugin: p.spec.Name, Kind: KindMalformed, Err: fmt.Errorf("%s returned %d: a %d-byte request there would end at byte %d, past the end of memory (%d bytes)",
			abi.ExportAlloc, ptr, len(req), uint64(ptr)+uint64(len(req)), mem.Size())}
	}
	in.arm(left)
	in.stack[0], in.stack[1] = uint64(ptr), uint64(len(req))
	err = in.hook.CallWithStack(ctx, in.stack)
	in.disarm()
	if err != nil {
		return p.failure(ctx, in, err, left)
	}
	optr, olen := uint32(in.stack[0]>>32), uint32(in.stack[0])
	if int(olen) > p.spec.MaxOutput {
		return &CallError{Plugin: p.spec.Name, Kind: KindOutput, Err: fmt.Errorf("%d bytes, over the cap of %d", olen, p.spec.MaxOutput)}
	}
	view, ok := mem.Read(optr, olen)
	if !ok {
		return &CallError{Plugin: p.spec.Name, Kind: KindMalformed, Err: fmt.Errorf("response at %d+%d is outside memory (%d bytes)", optr, olen, mem.Size())}
	}
	if err := decode(view); err != nil {
		var ge *abi.GuestError
		if errors.As(err, &ge) {
			discard = false // the plugin said no; the instance is fine
			return &CallError{Plugin: p.spec.Name, Kind: KindPlugin, Err: errors.New(ge.Message)}
		}
		return &CallError{Plugin: p.spec.Name, Kind: KindMalformed, Err: err}
	}
	discard = false
	return nil
}

// failure classifies an error from a call into the guest, which had left
// to run (its budget, or less when its caller's deadline came first).
func (p *Plugin) failure(ctx context.Context, in *instance, err error, left time.Duration) error {
	kind := KindTrap
	switch {
	case in.state.Load() == stopped:
		kind = KindStopped
		err = errors.New("its plugin was removed or replaced while it ran")
	case ctx.Err() != nil || in.poisoned: // the interrupt may fire before ctx's own timer
		kind = KindTimeout
		err = fmt.Errorf("budget of %s exceeded", p.spec.Budget)
		if left < p.spec.Budget {
			err = fmt.Errorf("stopped at its caller's deadline, %s after it began (its budget is %s)", left.Round(time.Millisecond), p.spec.Budget)
		}
	case isMemoryError(err):
		kind = KindMemory
	}
	return &CallError{Plugin: p.spec.Name, Kind: kind, Err: err}
}

func isMemoryError(err error) bool {
	s := err.Error()
	return containsAny(s, "out of memory", "memory.grow", "out of bounds memory")
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if len(sub) > 0 && len(s) >= len(sub) {
			for i := 0; i+len(sub) <= len(s); i++ {
				if s[i:i+len(sub)] == sub {
					return true
				}
			}
		}
	}
	return false
}

// Rewrite runs the plugin's rewrite hook.
func (p *Plugin) Rewrite(ctx context.Context, req *abi.RewriteRequest) (*abi.RewriteResponse, error) {
	var resp abi.RewriteResponse
	err := p.call(ctx, func(b []byte) []byte { return abi.AppendRewriteRequest(b, req) }, func(out []byte) error {
		if err := abi.DecodeRewriteResponse(out, &resp); err != nil {
			return err
		}
		// The byte fields alias guest memory: copy them out.
		resp.Query = bytes.Clone(resp.Query)
		resp.Filter = bytes.Clone(resp.Filter)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// Rank runs the plugin's rank hook.
func (p *Plugin) Rank(ctx context.Context, req *abi.RankRequest) (*abi.RankResponse, error) {
	var resp abi.RankResponse
	err := p.call(ctx, func(b []byte) []byte { return abi.AppendRankRequest(b, req) }, func(out []byte) error {
		return abi.DecodeRankResponse(out, len(req.Candidates), &resp)
	})
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// Metrics are a plugin version's call counters and latency histogram.
type Metrics struct {
	Calls atomic.Int64
	// grown counts calls that found every pooled instance busy and got
	// an extra instance of their own (see acquire).
	grown   atomic.Int64
	mu      sync.Mutex
	byKind  map[ErrorKind]*atomic.Int64
	buckets [len(latencyBounds) + 1]atomic.Int64
	sumNS   atomic.Int64
}

// latencyBounds are the histogram's upper bounds: 20 and 30 ms are the
// budgets' scale, so a p99 is read against a budget.
var latencyBounds = [...]time.Duration{
	time.Microsecond, 2 * time.Microsecond, 5 * time.Microsecond, 10 * time.Microsecond, 20 * time.Microsecond,
	50 * time.Microsecond, 100 * time.Microsecond, 200 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	30 * time.Millisecond, 50 * time.Millisecond,
}

// LatencyBounds are the bounds of Metrics.Latency's buckets.
func LatencyBounds() []time.Duration { return latencyBounds[:] }

func (m *Metrics) errors(k ErrorKind) *atomic.Int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byKind == nil {
		m.byKind = map[ErrorKind]*atomic.Int64{}
	}
	c := m.byKind[k]
	if c == nil {
		c = &atomic.Int64{}
		m.byKind[k] = c
	}
	return c
}

func (m *Metrics) observe(d time.Duration, err error) {
	m.Calls.Add(1)
	if err != nil {
		var ce *CallError
		if errors.As(err, &ce) {
			m.errors(ce.Kind).Add(1)
		}
	}
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	m.buckets[i].Add(1)
	m.sumNS.Add(int64(d))
}

// Latency returns the latency histogram: per bucket bound (LatencyBounds)
// the calls that took at most that long (cumulative), the count of every
// call and the sum of their durations. Read while calls run, the count is
// consistent with the buckets; the sum may include a call or two more.
func (m *Metrics) Latency() (cumulative []uint64, count uint64, sum time.Duration) {
	cumulative = make([]uint64, len(latencyBounds))
	for i := range m.buckets {
		count += uint64(m.buckets[i].Load())
		if i < len(cumulative) {
			cumulative[i] = count
		}
	}
	return cumulative, count, time.Duration(m.sumNS.Load())
}

// Errors returns the error counts by kind.
func (m *Metrics) Errors() map[ErrorKind]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[ErrorKind]int64, len(m.byKind))
	for k, c := range m.byKind {
		out[k] = c.Load()
	}
	return out
}

// ValueOf converts a stored field as bleve returns it (float64, string,
// bool, []float64 for a geopoint, []any) to an ABI value; anything else is
// missing.
func ValueOf(v any) abi.Value { return valueOf(v, 0) }

func valueOf(v any, depth int) abi.Value {
	switch x := v.(type) {
	case float64:
		return abi.Value{Kind: abi.KindNumber, Num: x}
	case string:
		return abi.Value{Kind: abi.KindString, Str: x}
	case bool:
		return abi.Value{Kind: abi.KindBool, Bool: x}
	case []float64:
		l := make([]abi.Value, len(x))
		for i, f := range x {
			l[i] = abi.Value{Kind: abi.KindNumber, Num: f}
		}
		return abi.Value{Kind: abi.KindList, List: l}
	case []any:
		if depth >= 3 {
			return abi.Value{}
		}
		l := make([]abi.Value, len(x))
		for i, e := range x {
			l[i] = valueOf(e, depth+1)
		}
		return abi.Value{Kind: abi.KindList, List: l}
	}
	return abi.Value{}
}
