// Package preempt rewrites a WebAssembly module so that its host can stop
// a call that runs too long, for the price of a counter at each function's
// entry and each loop's head.
//
// wazero can stop a call on its own (RuntimeConfig.WithCloseOnContextDone),
// but it pays for that with an exit from machine code into Go at every loop
// iteration (so that the Go scheduler may preempt the goroutine: machine
// code cannot be preempted), and with a goroutine per call. Measured on
// Quarry's plugins that is 2.2× on a Go ranker over 1,000 candidates and
// 2.6× on a Go no-op call (see docs/performance.md).
//
// Instrument adds two globals: an interrupt, exported as Export, and a
// fuel counter. At every function's entry and every loop's head the guest
// decrements the fuel; once in Fuel times it calls an added function that
// refills it, calls memory.grow(0) (which wazero runs in Go: the point where
// the Go scheduler can preempt the goroutine, so timers still fire with
// every processor busy in guests) and traps (unreachable) if the
// interrupt is set:
//
//	global.get $fuel  i32.const 1  i32.sub  global.set $fuel
//	global.get $fuel  i32.eqz
//	if  call $tick  end
//
// The host sets the interrupt to a non-zero value (api.MutableGlobal.Set,
// from any goroutine, e.g. a timer) when the call's budget is spent; the
// guest traps at its next tick. Unlike wazero's check, which is at loop
// heads only, this also stops a guest that runs long through recursion
// without loops. A trapped instance must be discarded: the trap may leave
// it anywhere.
//
// Instrument decodes every instruction, so it refuses a module it cannot
// read (a malformed body, an opcode it does not know) instead of guessing;
// the host then reports the module as not WebAssembly. It appends to the
// type, function, global, export and code sections, so no existing index
// moves, and it replaces a start section by an export (StartExport). Custom sections of DWARF debug information are dropped, as their
// code offsets would be wrong.
package preempt

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Export is the name under which the instrumented module exports the
// global that interrupts it.
const Export = "quarry_interrupt"

// StartExport is the name under which the instrumented module exports its
// start function, if it has one. WebAssembly runs a start function while
// the module is instantiated, before the host can reach the interrupt, so
// a start function that never returned could never be stopped: Instrument
// drops the start section and exports the function instead, and the host
// calls it right after instantiation, under the same budget as any call.
const StartExport = "quarry_start"

// Fuel is the number of function entries and loop iterations between two
// ticks: small enough that a guest reaches a tick within microseconds,
// large enough that the tick's exit into Go is lost in the loop's cost.
const Fuel = 1 << 14

// ErrMalformed reports a module Instrument cannot read.
var ErrMalformed = errors.New("malformed module")

// ErrLimit reports a module over one of the Limits Instrument was given.
var ErrLimit = errors.New("module over a compile limit")

// Limits bound what a module may ask of the compiler. wazero's compile
// time grows with the square of a body's block nesting (a 240 KB module of
// 80,000 nested blocks took 26 s), so a module past a limit is refused
// before it is compiled. A zero field is no limit.
type Limits struct {
	// Functions caps the functions a module defines.
	Functions uint32
	// BodyBytes caps one function body's size.
	BodyBytes uint32
	// Locals caps one function's locals (its parameters not counted).
	Locals uint32
	// Nesting caps the depth of blocks, loops, ifs and trys in one body
	// (the function's own block not counted).
	Nesting uint32
	// NestingWork caps, over the whole module, the sum of every block's
	// depth: what the compiler's work grows with (d nested blocks cost
	// d²/2), so that many bodies each within Nesting cannot add up.
	NestingWork uint64
}

// over reports whether n is past limit (0: none).
func over(n uint64, limit uint32) bool { return limit > 0 && n > uint64(limit) }

// Section ids (WebAssembly core specification, 5.5.2; tag from the
// exception-handling proposal).
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secCode      = 10
	secDataCount = 12
	secTag       = 13
	kindFunc     = 0
	kindMemory   = 2
	kindGlobal   = 3
	opUnreach    = 0x00
	opIf         = 0x04
	opEnd        = 0x0b
	opCall       = 0x10
	opGlobalGet  = 0x23
	opGlobalSet  = 0x24
	blockEmpty   = 0x40
)

// rank is each known section's place in the order the binary format
// requires (custom sections may go anywhere).
var rank = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, secTag: 6, secGlobal: 7, secExport: 8, secStart: 9, 9: 10, secDataCount: 11, secCode: 12, 11: 13}

type section struct {
	id   byte
	body []byte
}

// Instrument returns a copy of wasm with the checks described in the
// package comment, or an error wrapping ErrLimit if wasm is over one of
// lim. The input is not modified.
func Instrument(wasm []byte, lim Limits) ([]byte, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, fmt.Errorf("%w: no WebAssembly magic number", ErrMalformed)
	}
	if !bytes.Equal(wasm[4:8], []byte{1, 0, 0, 0}) {
		return nil, fmt.Errorf("%w: binary format version %x, want 1 (a core module)", ErrMalformed, wasm[4:8])
	}
	r := &reader{b: wasm, off: 8}
	var secs []section
	for !r.done() {
		id := r.byte()
		n := r.u32()
		body := r.bytes(int(n))
		if r.err != nil {
			return nil, r.err
		}
		if id != secCustom {
			if _, ok := rank[id]; !ok {
				return nil, fmt.Errorf("%w: unknown section id %d", ErrMalformed, id)
			}
		}
		secs = append(secs, section{id, body})
	}
	m := &module{lim: lim}
	for _, s := range secs {
		if err := m.learn(s); err != nil {
			return nil, err
		}
	}
	if over(uint64(m.funcsDefined), lim.Functions) {
		return nil, fmt.Errorf("%w: %d functions, over the limit of %d", ErrLimit, m.funcsDefined, lim.Functions)
	}
	m.interrupt, m.fuel = m.globalsImported+m.globalsDefined, m.globalsImported+m.globalsDefined+1
	m.tick = m.funcsImported + m.funcsDefined
	// Each section Instrument appends to, rewritten where the module has
	// it and added where it has not.
	extend := map[byte]func([]byte) ([]byte, error){
		secType:     m.types,
		secFunction: m.functions,
		secGlobal:   m.globals,
		secExport:   m.exports,
		secCode:     m.code,
	}
	extended := map[byte]bool{}
	out := append(make([]byte, 0, len(wasm)+len(wasm)/4+64), wasm[:8]...)
	add := func(id byte, old []byte) error {
		body, err := extend[id](old)
		if err != nil {
			return err
		}
		out = appendSection(out, id, body)
		extended[id] = true
		return nil
	}
	// missing adds, in order, the extended sections the module lacks that
	// go before a section of rank before.
	missing := func(before int) error {
		for _, id := range []byte{secType, secFunction, secGlobal, secExport, secCode} {
			if !extended[id] && rank[id] < before {
				if err := add(id, nil); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, s := range secs {
		if s.id == secStart { // exported instead (StartExport)
			continue
		}
		if s.id == secCustom {
			if !dropCustom(s.body) {
				out = appendSection(out, s.id, s.body)
			}
			continue
		}
		if err := missing(rank[s.id]); err != nil {
			return nil, err
		}
		if extend[s.id] != nil {
			if err := add(s.id, s.body); err != nil {
				return nil, err
			}
			continue
		}
		out = appendSection(out, s.id, s.body)
	}
	if err := missing(len(rank) + 1); err != nil {
		return nil, err
	}
	return out, nil
}

// dropCustom reports a custom section of debug information whose code
// offsets instrumenting would make wrong.
func dropCustom(body []byte) bool {
	r := &reader{b: body}
	name := r.name()
	return r.err == nil && (strings.HasPrefix(name, ".debug_") || name == "sourceMappingURL")
}

func appendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(body)))
	return append(out, body...)
}

// module is what Instrument learns of a module before rewriting it, and
// the indexes of what it adds.
type module struct {
	nTypes                          uint32
	funcsImported, funcsDefined     uint32
	globalsImported, globalsDefined uint32
	memory                          bool // the module has a memory (imported or its own)

	interrupt, fuel uint32 // the added globals
	tick            uint32 // the added function

	start    uint32 // the start function's index, if hasStart
	hasStart bool

	lim  Limits
	work uint64 // the sum of every block's depth so far (Limits.NestingWork)
}

// learn reads what Instrument needs of one section.
func (m *module) learn(s section) error {
	r := &reader{b: s.body}
	var err error
	switch s.id {
	case secType:
		m.nTypes, err = r.count()
	case secFunction:
		m.funcsDefined, err = r.count()
	case secMemory:
		var n uint32
		n, err = r.count()
		m.memory = m.memory || n > 0
	case secGlobal:
		m.globalsDefined, err = r.count()
	case secImport:
		err = m.readImports(r)
	case secExport:
		err = m.readExports(r)
	case secStart:
		m.start = r.u32()
		m.hasStart = true
		if r.err == nil && !r.done() {
			r.fail("%d bytes after the start function's index", len(r.b)-r.off)
		}
		err = r.err
	case 4, 9, 11, secTag, secCode: // table, element, data, tag, code: vectors
		// A count the section's bytes cannot hold (an unterminated LEB128
		// that wazero reads on into the next section) made wazero
		// allocate tens of gigabytes for a 39-byte module and the process
		// die of it (FuzzInstrument): refused here, before it compiles.
		_, err = r.count()
	case secDataCount: // one u32 and nothing else (wazero takes an empty one, then trips on the sections after it)
		r.u32()
		if r.err == nil && !r.done() {
			r.fail("%d bytes after the data count", len(r.b)-r.off)
		}
		err = r.err
	}
	return err
}

func (m *module) readImports(r *reader) error {
	n, _ := r.count()
	for range n {
		r.name()
		r.name()
		switch kind := r.byte(); kind {
		case kindFunc:
			r.u32()
			m.funcsImported++
		case 1: // table
			r.refType()
			r.limits()
		case kindMemory:
			r.limits()
			m.memory = true
		case kindGlobal:
			r.valType()
			r.byte()
			m.globalsImported++
		case 4: // tag
			r.byte()
			r.u32()
		default:
			if r.err == nil {
				r.fail("import kind %d", kind)
			}
		}
		if r.err != nil {
			return fmt.Errorf("import section: %w", r.err)
		}
	}
	return r.err
}

func (m *module) readExports(r *reader) error {
	n, _ := r.count()
	for range n {
		name := r.name()
		r.byte()
		r.u32()
		if r.err != nil {
			return fmt.Errorf("export section: %w", r.err)
		}
		if name == Export || name == StartExport {
			return fmt.Errorf("%w: the module exports %q, a name the host reserves", ErrMalformed, name)
		}
	}
	return r.err
}

// types appends the tick's type, () -> ().
func (m *module) types(old []byte) ([]byte, error) {
	return appendEntries(old, []byte{0x60, 0, 0}), nil
}

// functions appends the tick's declaration.
func (m *module) functions(old []byte) ([]byte, error) {
	return appendEntries(old, appendU32(nil, m.nTypes)), nil
}

// globals appends the interrupt (a mutable i32, zero) and the fuel (a
// mutable i32, Fuel).
func (m *module) globals(old []byte) ([]byte, error) {
	out := appendEntries(old, []byte{0x7f, 0x01, 0x41, 0x00, opEnd})
	out = appendEntries(out, append(appendSleb(append([]byte{}, 0x7f, 0x01, 0x41), Fuel), opEnd))
	return out, nil
}

// exports appends the interrupt's export and the start function's.
func (m *module) exports(old []byte) ([]byte, error) {
	out := appendEntries(old, exportEntry(Export, kindGlobal, m.interrupt))
	if m.hasStart {
		out = appendEntries(out, exportEntry(StartExport, kindFunc, m.start))
	}
	return out, nil
}

// exportEntry is one entry of the export section.
func exportEntry(name string, kind byte, index uint32) []byte {
	e := appendU32(nil, uint32(len(name)))
	e = append(e, name...)
	e = append(e, kind)
	return appendU32(e, index)
}

// appendEntries returns a vector section with entry appended (its count
// one more). Instrument has read the section's count already, so it is
// well formed.
func appendEntries(old, entry []byte) []byte {
	var n uint32
	var rest []byte
	if len(old) > 0 {
		r := &reader{b: old}
		n = r.u32()
		rest = old[r.off:]
	}
	out := appendU32(make([]byte, 0, len(old)+len(entry)+5), n+1)
	out = append(out, rest...)
	return append(out, entry...)
}

// check is the instruction sequence at every function entry and loop
// head: spend one fuel, and tick when it runs out.
func (m *module) check() []byte {
	c := appendU32([]byte{opGlobalGet}, m.fuel)
	c = append(c, 0x41, 0x01, 0x6b, opGlobalSet) // i32.const 1, i32.sub
	c = appendU32(c, m.fuel)
	c = appendU32(append(c, opGlobalGet), m.fuel)
	c = append(c, 0x45, opIf, blockEmpty, opCall) // i32.eqz
	c = appendU32(c, m.tick)
	return append(c, opEnd)
}

// tickBody is the added function: refill the fuel, give the Go scheduler
// its chance (memory.grow(0) runs in Go), and trap if interrupted.
func (m *module) tickBody() []byte {
	b := append(appendSleb([]byte{0x00, 0x41}, Fuel), opGlobalSet) // no locals; i32.const Fuel
	b = appendU32(b, m.fuel)
	if m.memory {
		b = append(b, 0x41, 0x00, 0x40, 0x00, 0x1a) // i32.const 0, memory.grow 0, drop
	}
	b = appendU32(append(b, opGlobalGet), m.interrupt)
	return append(b, opIf, blockEmpty, opUnreach, opEnd, opEnd)
}

// code returns the code section with the checks inserted in every body
// and the tick's body appended.
func (m *module) code(b []byte) ([]byte, error) {
	r := &reader{b: b}
	var n uint32
	if len(b) > 0 {
		var err error
		if n, err = r.count(); err != nil {
			return nil, fmt.Errorf("code section: %w", err)
		}
	}
	if n != m.funcsDefined {
		return nil, fmt.Errorf("%w: %d function bodies for %d declared functions", ErrMalformed, n, m.funcsDefined)
	}
	check := m.check()
	out := appendU32(make([]byte, 0, len(b)+len(b)/4+16), n+1)
	var body []byte
	for i := range n {
		size := r.u32()
		if r.err == nil && over(uint64(size), m.lim.BodyBytes) {
			return nil, fmt.Errorf("%w: function body %d is %d bytes, over the limit of %d", ErrLimit, i, size, m.lim.BodyBytes)
		}
		fn := r.bytes(int(size))
		if r.err != nil {
			return nil, fmt.Errorf("code section: function body %d: %w", i, r.err)
		}
		var err error
		body, err = m.function(body[:0], fn, check)
		if errors.Is(err, ErrLimit) {
			return nil, fmt.Errorf("function body %d: %w", i, err)
		}
		if err != nil {
			return nil, fmt.Errorf("code section: function body %d: %w", i, err)
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if !r.done() {
		return nil, fmt.Errorf("code section: %w: %d bytes after the last body", ErrMalformed, len(b)-r.off)
	}
	tick := m.tickBody()
	out = appendU32(out, uint32(len(tick)))
	return append(out, tick...), nil
}

// function copies one body into out, a check after its locals and after
// every loop's block type.
func (m *module) function(out, fn, check []byte) ([]byte, error) {
	r := &reader{b: fn}
	groups, _ := r.count()
	var locals uint64
	for range groups {
		locals += uint64(r.u32())
		r.valType()
	}
	if r.err != nil {
		return nil, fmt.Errorf("locals: %w", r.err)
	}
	if over(locals, m.lim.Locals) {
		return nil, fmt.Errorf("%w: %d locals, over the limit of %d", ErrLimit, locals, m.lim.Locals)
	}
	out = append(out, fn[:r.off]...)
	out = append(out, check...)
	var depth int64 // blocks open, the function's own not counted
	for !r.done() {
		start := r.off
		op := r.byte()
		r.immediates(op, m.globalsImported+m.globalsDefined, m.funcsImported+m.funcsDefined)
		if r.err != nil {
			return nil, fmt.Errorf("instruction 0x%02x at body offset %d: %w", op, start, r.err)
		}
		out = append(out, fn[start:r.off]...)
		switch op {
		case 0x02, 0x03, 0x04, 0x06, 0x1f: // block, loop, if, try, try_table
			if depth++; over(uint64(depth), m.lim.Nesting) {
				return nil, fmt.Errorf("%w: blocks nested %d deep at body offset %d, over the limit of %d", ErrLimit, depth, start, m.lim.Nesting)
			}
			if m.work += uint64(depth); m.lim.NestingWork > 0 && m.work > m.lim.NestingWork {
				return nil, fmt.Errorf("%w: its blocks' depths add up to over %d (each block counts its depth), the limit", ErrLimit, m.lim.NestingWork)
			}
		case opEnd:
			depth--
		}
		if op == 0x03 { // loop
			out = append(out, check...)
		}
	}
	return out, nil
}

// immediates skips the immediates of the instruction op, refusing a
// global index at or past globals or a function index at or past funcs
// (the module's own, before the ones Instrument adds: a guest must not
// name those).
func (r *reader) immediates(op byte, globals, funcs uint32) {
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04 || op == 0x06: // block, loop, if, try
		r.blockType()
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0a || op == opEnd || op == 0x0f || op == 0x19 || op == 0x1a || op == 0x1b || op == 0xd1:
		// unreachable, nop, else, throw_ref, end, return, catch_all, drop, select, ref.is_null
	case op == 0x07 || op == 0x08 || op == 0x09 || op == 0x0c || op == 0x0d || op == 0x18:
		// catch, throw, rethrow, br, br_if, delegate
		r.u32()
	case op == opCall || op == 0x12 || op == 0xd2: // call, return_call, ref.func
		if f := r.u32(); r.err == nil && f >= funcs {
			r.fail("function %d does not exist (the module has %d)", f, funcs)
		}
	case op == 0x0e: // br_table
		n, _ := r.count()
		for range n + 1 {
			r.u32()
		}
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select t*
		n, _ := r.count()
		for range n {
			r.valType()
		}
	case op == 0x1f: // try_table
		r.blockType()
		n, _ := r.count()
		for range n {
			switch kind := r.byte(); kind {
			case 0, 1:
				r.u32()
				r.u32()
			case 2, 3:
				r.u32()
			default:
				r.fail("catch kind %d", kind)
			}
		}
	case op >= 0x20 && op <= 0x22: // local.get, local.set, local.tee
		r.u32()
	case op == 0x23 || op == 0x24: // global.get, global.set
		if g := r.u32(); r.err == nil && g >= globals {
			r.fail("global %d does not exist (the module has %d)", g, globals)
		}
	case op == 0x25 || op == 0x26: // table.get, table.set
		r.u32()
	case op >= 0x28 && op <= 0x3e: // loads and stores
		r.memArg()
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		r.u32()
	case op == 0x41:
		r.sleb(32)
	case op == 0x42:
		r.sleb(64)
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op >= 0x45 && op <= 0xc4: // numeric instructions
	case op == 0xd0: // ref.null
		r.heapType()
	case op == 0xfc:
		r.miscImmediates(r.u32())
	case op == 0xfd:
		r.simdImmediates(r.u32())
	case op == 0xfe:
		r.atomicImmediates(r.u32())
	default:
		r.fail("unknown opcode")
	}
}

// miscImmediates: the 0xfc prefix (saturating truncation, bulk memory,
// tables).
func (r *reader) miscImmediates(sub uint32) {
	switch {
	case sub <= 7:
	case sub == 8, sub == 12, sub == 14: // memory.init, table.init, table.copy
		r.u32()
		r.u32()
	case sub == 10: // memory.copy
		r.u32()
		r.u32()
	case sub == 9, sub == 11, sub == 13, sub == 15, sub == 16, sub == 17: // data.drop, memory.fill, elem.drop, table.grow/size/fill
		r.u32()
	default:
		r.fail("unknown 0xfc instruction %d", sub)
	}
}

// simdImmediates: the 0xfd prefix (fixed-width and relaxed SIMD).
func (r *reader) simdImmediates(sub uint32) {
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads, stores, load*_zero
		r.memArg()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		r.byte()
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		r.memArg()
		r.byte()
	case sub <= 0x113:
	default:
		r.fail("unknown 0xfd instruction %d", sub)
	}
}

// atomicImmediates: the 0xfe prefix (threads).
func (r *reader) atomicImmediates(sub uint32) {
	switch {
	case sub == 3: // atomic.fence
		r.byte()
	case sub <= 2, sub >= 0x10 && sub <= 0x4e:
		r.memArg()
	default:
		r.fail("unknown 0xfe instruction %d", sub)
	}
}

// reader decodes the binary format; the first error sticks and every
// later read returns zero.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) done() bool { return r.err != nil || r.off >= len(r.b) }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format+" at offset %d", append([]any{ErrMalformed}, append(args, r.off)...)...)
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail("%d bytes past the end", n-(len(r.b)-r.off))
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *reader) uleb(bits uint) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= bits+7 || shift >= 70 {
			r.fail("LEB128 longer than %d bits", bits)
			return 0
		}
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if bits < 64 && v>>bits != 0 {
				r.fail("LEB128 over %d bits", bits)
				return 0
			}
			return v
		}
	}
}

func (r *reader) u32() uint32 { return uint32(r.uleb(32)) }

// sleb skips a signed LEB128 of at most bits bits.
func (r *reader) sleb(bits uint) {
	for shift := uint(0); ; shift += 7 {
		if shift >= bits+7 {
			r.fail("LEB128 longer than %d bits", bits)
			return
		}
		c := r.byte()
		if r.err != nil || c&0x80 == 0 {
			return
		}
	}
}

// count reads a vector's length, refusing one longer than the bytes left
// (every entry takes at least one byte).
func (r *reader) count() (uint32, error) {
	n := r.u32()
	if r.err == nil && int(n) > len(r.b)-r.off {
		r.fail("a vector of %d entries in %d bytes", n, len(r.b)-r.off)
	}
	if r.err != nil {
		return 0, r.err
	}
	return n, nil
}

func (r *reader) name() string {
	n := r.u32()
	return string(r.bytes(int(n)))
}

func (r *reader) valType() {
	switch t := r.byte(); t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69: // i32 i64 f32 f64 v128 funcref externref exnref
	default:
		if r.err == nil {
			r.fail("value type 0x%02x", t)
		}
	}
}

func (r *reader) refType() {
	switch t := r.byte(); t {
	case 0x70, 0x6f, 0x69:
	default:
		if r.err == nil {
			r.fail("reference type 0x%02x", t)
		}
	}
}

func (r *reader) heapType() {
	switch t := r.byte(); t {
	case 0x70, 0x6f, 0x69:
	default:
		if r.err == nil {
			r.fail("heap type 0x%02x", t)
		}
	}
}

// blockType skips a block type: empty, one value type, or a type index
// (a signed 33-bit LEB128).
func (r *reader) blockType() {
	if r.off < len(r.b) {
		switch r.b[r.off] {
		case blockEmpty, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69:
			r.off++
			return
		}
	}
	r.sleb(33)
}

// memArg skips an alignment (with a memory index when its bit 6 is set:
// multiple memories) and an offset.
func (r *reader) memArg() {
	align := r.u32()
	if align&0x40 != 0 {
		r.u32()
	}
	r.uleb(64)
}

// limits skips a table's or memory's limits.
func (r *reader) limits() {
	flags := r.byte()
	if flags > 7 {
		r.fail("limits flags 0x%02x", flags)
		return
	}
	bits := uint(32)
	if flags&4 != 0 {
		bits = 64
	}
	r.uleb(bits)
	if flags&1 != 0 {
		r.uleb(bits)
	}
}

// appendSleb appends v as a signed LEB128.
func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
