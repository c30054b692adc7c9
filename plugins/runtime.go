package plugins

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// Defaults of Config, which the CLI's flags show too.
const (
	// DefaultMemoryLimitPages is an instance's memory cap: 64 MiB.
	DefaultMemoryLimitPages = 1024
	// DefaultMaxInstances is a runtime's (a team's) warm instances cap.
	DefaultMaxInstances = 64
	// DefaultWarmInstances is how many instances of a plugin are made
	// when it loads.
	DefaultWarmInstances = 1
	// DefaultMaxBudget is the longest budget a plugin call may be given
	// (a step's budget_ms).
	DefaultMaxBudget = 5 * time.Second
	// DefaultCompileTimeout bounds one module's compile: a 7 MB Go
	// program compiles in 1.2–2.3 s (ten times that under the race
	// detector).
	DefaultCompileTimeout = time.Minute
)

// CompileLimits bound what a module may ask of the compiler: wazero's
// compile time grows with the square of a function's block nesting (a
// 240 KB module of 80,000 nested blocks took 26 s to compile), so a
// module over a limit is refused before it is compiled. Browsers' engines
// apply limits of the same kind.
type CompileLimits struct {
	// Functions caps the functions a module defines.
	Functions uint32
	// BodyBytes caps one function body's size.
	BodyBytes uint32
	// Locals caps one function's locals (its parameters not counted).
	Locals uint32
	// Nesting caps the depth of blocks, loops, ifs and trys in one
	// function body.
	Nesting uint32
	// NestingWork caps, over the whole module, the sum of every block's
	// depth: what compile time grows with (d nested blocks cost d²/2), so
	// that many bodies each within Nesting cannot add up.
	NestingWork uint64
}

// DefaultCompileLimits are the compile limits of a Config that sets none,
// measured against what compilers emit and what compiling costs
// (docs/RATIONALE.md, "Compile limits"): a Go program of 7 MB (json,
// regexp, templates, go/format) defines 4,892 functions, its largest body
// is 50,636 bytes, its deepest nesting 570 blocks (nesting work 6.1
// million), its most locals 20; 4,000 nested blocks compile in 65 ms,
// 8,000 in 230 ms. Locals and functions follow browsers' engines.
var DefaultCompileLimits = CompileLimits{Functions: 200_000, BodyBytes: 2 << 20, Locals: 50_000, Nesting: 4096, NestingWork: 64 << 20}

// ErrCompileLimit reports a module over one of its runtime's
// CompileLimits.
var ErrCompileLimit = errors.New("module over a compile limit")

// Config configures a runtime. Zero values are documented defaults.
type Config struct {
	// CacheDir keeps compiled plugins across restarts; empty: in memory.
	// Runtimes may share one directory (wazero's file cache writes each
	// entry through a rename), whatever their CloseOnContextDone: wazero
	// keys an entry by the module's bytes alone, not by whether it was
	// compiled with its own termination checks, but a runtime without
	// them compiles the instrumented module (other bytes), so neither
	// ever loads code compiled for the other.
	CacheDir string
	// MemoryLimitPages caps each instance's memory, in 64 KiB pages
	// (default DefaultMemoryLimitPages: 64 MiB).
	MemoryLimitPages uint32
	// MaxInstances caps the warm instances of every plugin loaded in the
	// runtime together (default DefaultMaxInstances; negative: no cap).
	// With MemoryLimitPages it bounds the runtime's memory: MaxInstances ×
	// MemoryLimitPages × 64 KiB.
	MaxInstances int
	// CloseOnContextDone stops calls over budget with wazero's own
	// mechanism (RuntimeConfig.WithCloseOnContextDone) instead of
	// Quarry's: a check compiled into every loop head that costs an
	// indirect call, and a goroutine per call. The default (false)
	// instruments each module with a load and a branch at every function
	// entry and loop head instead (plugins/internal/preempt), 2–2.6×
	// faster on loop-heavy guests; this switch is kept to measure the two
	// side by side.
	CloseOnContextDone bool
	// WarmInstances is how many instances of each plugin's pool
	// (Spec.Instances) are made when it loads (default
	// DefaultWarmInstances; at most Spec.Instances). The others are made
	// when calls first find every made instance busy, once each: a pool
	// only holds the memory its plugin's concurrency needs.
	WarmInstances int
	// Logger gets the plugins' lines when LogSink is nil.
	Logger *slog.Logger
	// LogSink, when set, gets every line the plugins write (the log
	// import, stdout, stderr) in place of Logger. It must not block.
	LogSink LogSink
	// Team names the runtime's team in LogLines (Teams sets it).
	Team string
	// Compile bounds what a module may ask of the compiler (default
	// DefaultCompileLimits; a zero field: that default). A module over a
	// limit is refused with ErrCompileLimit before it is compiled.
	Compile CompileLimits
	// CompileTimeout bounds one module's compile (default
	// DefaultCompileTimeout): a longer one is stopped and the module
	// refused with ErrCompileLimit.
	CompileTimeout time.Duration
	// CompileWorkers is how many modules the runtime compiles at once
	// (default 1): a team's compiles take turns, and wait for a worker
	// within their caller's deadline.
	CompileWorkers int
	// MaxBudget is the longest Spec.Budget a plugin may load with
	// (default DefaultMaxBudget): an operator's bound on what one call
	// of a team's plugin may cost, whatever the team asks for.
	MaxBudget time.Duration
	// MaxCalls caps the calls of the runtime's plugins that run at once
	// (default DefaultMaxCalls: half the processors, at least one;
	// negative: no cap). Go's scheduler does not preempt a guest's code
	// as it does Go code (with one processor, a garbage collection waited
	// 142 ms beside a spinning call): each call takes a processor until
	// it returns or its budget's interrupt stops it, so a team whose calls
	// spin could otherwise take every processor for their budgets, and
	// every other team's searches would wait (issue 34: a calm team's p99
	// 12x beside three spinning calls, 3x with the cap, on two cores). A
	// call past the cap waits for another to end, within its deadline,
	// then fails as busy.
	MaxCalls int
}

// DefaultMaxCalls is Config.MaxCalls's default: half the processors Go
// runs on (GOMAXPROCS), at least one.
func DefaultMaxCalls() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// Runtime compiles and runs plugins. Brokers keep one per team (see
// Teams), so one team's plugins cannot use another's instances, memory or
// compilation cache.
type Runtime struct {
	cfg   Config
	rt    wazero.Runtime
	cache wazero.CompilationCache

	// compiling holds a token per compile under way (CompileWorkers).
	compiling chan struct{}
	// calls counts the calls running against MaxCalls (nil: no cap).
	calls *callSlots

	mu        sync.Mutex
	instances int // reserved by loaded plugins
	// busyNS is the time calls of the runtime's plugins held an instance:
	// one goroutine each, so about the CPU time the team's plugins took.
	busyNS atomic.Int64
}

// ErrLimit reports a plugin that does not fit its runtime's limits.
var ErrLimit = errors.New("runtime limit reached")

// reserve takes n instances from the runtime's budget.
func (r *Runtime) reserve(name string, n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.MaxInstances > 0 && r.instances+n > r.cfg.MaxInstances {
		return fmt.Errorf("plugin %s: %w: it asks for %d instances and %d of the %d allowed are in use", name, ErrLimit, n, r.instances, r.cfg.MaxInstances)
	}
	r.instances += n
	return nil
}

func (r *Runtime) release(n int) {
	r.mu.Lock()
	r.instances -= n
	r.mu.Unlock()
}

// Instances reports the warm instances reserved by the runtime's loaded
// plugins.
func (r *Runtime) Instances() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.instances
}

// allowedWASI is every WASI function a Go wasip1 reactor imports. With no
// file system, environment or arguments configured they reach nothing; a
// plugin importing anything else (path_open, sock_accept…) is refused.
var allowedWASI = map[string]bool{
	"sched_yield": true, "proc_exit": true, "args_get": true, "args_sizes_get": true,
	"clock_time_get": true, "clock_res_get": true, "environ_get": true, "environ_sizes_get": true,
	"fd_write": true, "fd_read": true, "random_get": true, "poll_oneoff": true, "fd_close": true,
	"fd_fdstat_get": true, "fd_fdstat_set_flags": true, "fd_prestat_get": true, "fd_prestat_dir_name": true,
	"fd_seek": true,
}

// wazeroVersion has wazero read its own version once, before any of
// Quarry's runtimes or compilation caches: wazero (1.12) keeps it in a
// global it fills without a lock the first time a compiler engine or a
// file cache asks for it, so two runtimes made at once (two teams' first
// pushes, in tests two nodes') raced there under -race.
var wazeroVersion sync.Once

// NewRuntime starts a runtime with the WASI subset and Quarry's host
// functions.
func NewRuntime(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.MaxInstances == 0 {
		cfg.MaxInstances = DefaultMaxInstances
	}
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.WarmInstances <= 0 {
		cfg.WarmInstances = DefaultWarmInstances
	}
	if cfg.MaxBudget <= 0 {
		cfg.MaxBudget = DefaultMaxBudget
	}
	if cfg.CompileTimeout <= 0 {
		cfg.CompileTimeout = DefaultCompileTimeout
	}
	if cfg.CompileWorkers <= 0 {
		cfg.CompileWorkers = 1
	}
	if cfg.MaxCalls == 0 {
		cfg.MaxCalls = DefaultMaxCalls()
	}
	d := DefaultCompileLimits
	cfg.Compile = CompileLimits{Functions: cmp.Or(cfg.Compile.Functions, d.Functions), BodyBytes: cmp.Or(cfg.Compile.BodyBytes, d.BodyBytes),
		Locals: cmp.Or(cfg.Compile.Locals, d.Locals), Nesting: cmp.Or(cfg.Compile.Nesting, d.Nesting), NestingWork: cmp.Or(cfg.Compile.NestingWork, d.NestingWork)}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	wazeroVersion.Do(func() { wazero.NewRuntime(context.Background()).Close(context.Background()) })
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(cfg.CloseOnContextDone).WithMemoryLimitPages(cfg.MemoryLimitPages)
	r := &Runtime{cfg: cfg, compiling: make(chan struct{}, cfg.CompileWorkers)}
	if cfg.MaxCalls > 0 {
		r.calls = newCallSlots(cfg.MaxCalls)
	}
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("plugin compilation cache %s: %w", cfg.CacheDir, err)
		}
		r.cache = cache
		rc = rc.WithCompilationCache(cache)
	}
	r.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.rt); err != nil {
		r.rt.Close(ctx)
		return nil, fmt.Errorf("wasi: %w", err)
	}
	_, err := r.rt.NewHostModuleBuilder(abi.ImportModule).
		// Stack-based host functions (logFunc, configFunc): WithFunc's reflection
		// allocates on every call, and a guest may log thousands of times
		// a call.
		NewFunctionBuilder().WithGoModuleFunction(logFunc, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).Export(abi.ImportLog).
		NewFunctionBuilder().WithGoModuleFunction(configFunc, []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).Export(abi.ImportConfig).
		Instantiate(ctx)
	if err != nil {
		r.rt.Close(ctx)
		return nil, fmt.Errorf("host module: %w", err)
	}
	return r, nil
}

// MaxBudget is the longest budget a plugin may load with
// (Config.MaxBudget).
func (r *Runtime) MaxBudget() time.Duration { return r.cfg.MaxBudget }

// Close releases the runtime and every plugin loaded in it.
func (r *Runtime) Close(ctx context.Context) error {
	err := r.rt.Close(ctx)
	if r.cache != nil {
		r.cache.Close(ctx)
	}
	return err
}

// modules maps each live instance's module to what host functions know of
// it (they are given the calling module): a map read when a guest calls
// the host, instead of a context value made on every call.
var modules sync.Map // api.Module → *guest

// guest is what the host functions know of an instance: its plugin, and
// the state of the call it serves (an instance serves one at a time, on
// the goroutine that calls it, so its fields need no lock).
type guest struct {
	p *Plugin
	// logsShut: at a line of this call the team was over its log rate
	// (LogAdmitter): the call's later lines are dropped without asking
	// again, counted in logsDropped and told to the sink when the call
	// ends (LogDropCounter). A plugin logging 2,000 lines a call over the
	// rate asked 2,000 times, a lock and a clock read each: 13% of the
	// process's CPU beside a calm team (TestAttackIsolation).
	logsShut    bool
	logsDropped int
}

func guestOf(m api.Module) *guest {
	g, _ := modules.Load(m)
	gu, _ := g.(*guest)
	return gu
}

func pluginOf(m api.Module) *Plugin {
	if g := guestOf(m); g != nil {
		return g.p
	}
	return nil
}

// beginCall readies g for a new call: its team's log lines are asked for
// again.
func (g *guest) beginCall() { g.logsShut, g.logsDropped = false, 0 }

// endCall tells the sink how many of the call's lines were dropped
// without being asked for.
func (g *guest) endCall() {
	if g.logsDropped == 0 {
		return
	}
	if c, ok := g.p.rt.cfg.LogSink.(LogDropCounter); ok {
		c.LogsDropped(g.p.rt.cfg.Team, g.logsDropped)
	}
	g.logsDropped = 0
}

// maxLogMessage caps one log message from a guest.
const maxLogMessage = 4096

// logFunc and configFunc are hostLog and hostConfig on wazero's stack:
// (level, ptr, n) and (ptr, capacity) → length.
var (
	logFunc = api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
		hostLog(ctx, m, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2]))
	})
	configFunc = api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
		stack[0] = api.EncodeU32(hostConfig(ctx, m, api.DecodeU32(stack[0]), api.DecodeU32(stack[1])))
	})
)

func hostLog(ctx context.Context, m api.Module, level, ptr, n uint32) {
	g := guestOf(m)
	if g == nil {
		return
	}
	p := g.p
	n = min(n, maxLogMessage)
	sink := p.rt.cfg.LogSink
	if sink != nil && g.logsShut {
		g.logsDropped++ // the call's team was over its rate: not asked again
		return
	}
	if sink != nil && !p.rt.admitLog() {
		g.logsShut = true
		return // over the team's rate: neither read nor built
	}
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		return
	}
	if sink != nil {
		sink.PluginLog(LogLine{Time: time.Now(), Team: p.rt.cfg.Team, Plugin: p.spec.Name, Version: p.spec.Version,
			Level: levelName(level), Source: "log", RequestID: requestid.From(ctx), Message: string(b)})
		return
	}
	lvl := slog.LevelInfo
	switch level {
	case abi.LevelDebug:
		lvl = slog.LevelDebug
	case abi.LevelWarn:
		lvl = slog.LevelWarn
	case abi.LevelError:
		lvl = slog.LevelError
	}
	if id := requestid.From(ctx); id != "" {
		p.log.Log(ctx, lvl, string(b), "request_id", id)
		return
	}
	p.log.Log(ctx, lvl, string(b))
}

func hostConfig(ctx context.Context, m api.Module, ptr, capacity uint32) uint32 {
	p := pluginOf(m)
	if p == nil {
		return 0
	}
	cfg := p.spec.Config
	if uint32(len(cfg)) <= capacity {
		m.Memory().Write(ptr, cfg)
	}
	return uint32(len(cfg))
}

// check refuses a module that is not a Quarry plugin of the right kind and
// ABI version, or that imports anything the host does not provide.
func check(cm wazero.CompiledModule, kind Kind) error {
	exports := cm.ExportedFunctions()
	if _, ok := exports[abi.ExportVersion]; !ok {
		for name := range exports {
			if strings.HasPrefix(name, "quarry_abi_v") {
				return fmt.Errorf("%w: plugin speaks %s, this host speaks %s", ErrABIVersion, name, abi.ExportVersion)
			}
		}
		return fmt.Errorf("%w: it does not export %s (not a Quarry plugin, or built without the SDK)", ErrABIVersion, abi.ExportVersion)
	}
	for _, name := range []string{abi.ExportAlloc, export(kind)} {
		if _, ok := exports[name]; !ok {
			return fmt.Errorf("%w: a %s must export %s", ErrMissingExport, kind, name)
		}
	}
	for _, name := range []string{abi.ExportVersion, abi.ExportAlloc, export(kind), abi.ExportInitialize} {
		f, ok := exports[name]
		if !ok {
			continue
		}
		want := exportTypes[name]
		if got := signature(f.ParamTypes(), f.ResultTypes()); got != want {
			return fmt.Errorf("%w: a %s must export %s as %s; this one is %s", ErrMissingExport, kind, name, want, got)
		}
	}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch {
		case mod == wasi_snapshot_preview1.ModuleName && allowedWASI[name]:
		case mod == abi.ImportModule && (name == abi.ImportLog || name == abi.ImportConfig):
		case strings.HasPrefix(mod, "quarry_abi_v") && mod != abi.ImportModule:
			return fmt.Errorf("%w: plugin imports %s.%s, this host speaks %s", ErrABIVersion, mod, name, abi.ImportModule)
		default:
			return fmt.Errorf("%w: %s.%s (plugins get no file system, network or environment)", ErrForbiddenImport, mod, name)
		}
	}
	if len(cm.ImportedMemories()) > 0 {
		return fmt.Errorf("%w: an imported memory", ErrForbiddenImport)
	}
	return nil
}

// exportTypes are the guest exports' types, as signature writes them.
var exportTypes = map[string]string{
	abi.ExportVersion:    "() -> ()",
	abi.ExportAlloc:      "(i32) -> i32",
	abi.ExportRewrite:    "(i32, i32) -> i64",
	abi.ExportRank:       "(i32, i32) -> i64",
	abi.ExportInitialize: "() -> ()",
}

// signature writes a function type: "(i32, i32) -> i64".
func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return strings.Join(s, ", ")
	}
	r := names(results)
	if len(results) != 1 {
		r = "(" + r + ")"
	}
	return "(" + names(params) + ") -> " + r
}

// Errors of loading, for callers to branch on.
var (
	ErrNotWasm         = errors.New("not a WebAssembly module")
	ErrMemoryLimit     = errors.New("plugin memory over the limit")
	ErrABIVersion      = errors.New("wrong plugin ABI version")
	ErrMissingExport   = errors.New("missing plugin export")
	ErrForbiddenImport = errors.New("import not provided to plugins")
	ErrInit            = errors.New("plugin initialization failed")
)

// callSlots counts a runtime's calls running against its cap
// (Config.MaxCalls): taking and giving back a slot is an atomic add each
// when one is free; a call that finds none sleeps until one is given back
// or its deadline.
type callSlots struct {
	max      int64
	running  atomic.Int64
	sleepers atomic.Int64
	// wake gets a token when a slot is given back while calls sleep: as
	// many as there are slots, so none is lost.
	wake chan struct{}
	// waited counts the calls that found no slot free at once.
	waited atomic.Int64
}

// callsWaited is how many calls found no slot free at once (0 without a
// cap).
func (r *Runtime) callsWaited() int64 {
	if r.calls == nil {
		return 0
	}
	return r.calls.waited.Load()
}

// CallsRunning is how many of the team's plugin calls run now on this
// runtime, against Config.MaxCalls (0 without a cap: uncapped calls are
// not counted).
func (r *Runtime) CallsRunning() int {
	if r.calls == nil {
		return 0
	}
	// A take that found no slot free counts for a moment before it gives
	// it back.
	return int(min(r.calls.running.Load(), r.calls.max))
}

func newCallSlots(n int) *callSlots {
	return &callSlots{max: int64(n), wake: make(chan struct{}, n)}
}

// take takes a slot if one is free.
func (c *callSlots) take() bool {
	if c.running.Add(1) <= c.max {
		return true
	}
	c.running.Add(-1)
	return false
}

// wait takes a slot, sleeping until one is given back, or reports false
// when ctx ends first.
func (c *callSlots) wait(ctx context.Context) bool {
	c.waited.Add(1)
	c.sleepers.Add(1)
	defer c.sleepers.Add(-1)
	for {
		if c.take() {
			return true
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			return false
		}
	}
}

// give gives a slot back, waking a sleeping call if there is one.
func (c *callSlots) give() {
	c.running.Add(-1)
	if c.sleepers.Load() > 0 {
		select {
		case c.wake <- struct{}{}:
		default: // tokens enough are on their way
		}
	}
}
