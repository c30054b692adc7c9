// Package abi is the contract between Quarry (the host) and a plugin (the
// guest): the names of exports and imports, the ABI version, status codes
// and the binary encoding of requests and responses. The host and the Go
// SDK both use it, so the contract is written once; docs/plugin-abi.md
// describes the same thing for authors in other languages.
//
// Standard library only.
package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Version is the ABI version. It is part of the names below, so a host and
// a guest that disagree fail when the plugin is loaded, not mid-query.
const Version = 1

// Guest exports.
const (
	// ExportVersion must be exported (a function of no arguments and no
	// results) by every plugin: it marks the ABI version the plugin speaks.
	ExportVersion = "quarry_abi_v1"
	// ExportAlloc is alloc(size i32) -> ptr i32: the guest returns a buffer
	// of size bytes in its memory for the host to write a request into.
	ExportAlloc = "quarry_alloc"
	// ExportRewrite is rewrite(ptr i32, len i32) -> i64 and ExportRank is
	// rank(ptr i32, len i32) -> i64: the request is at [ptr, ptr+len); the
	// result packs the response's pointer (high 32 bits) and length (low 32
	// bits). The response is valid until the next call into the guest.
	ExportRewrite = "quarry_rewrite"
	ExportRank    = "quarry_rank"
	// ExportInitialize is the WASI reactor initializer, called once per
	// instance before anything else if the guest exports it.
	ExportInitialize = "_initialize"
)

// Host imports, all in module ImportModule.
const (
	ImportModule = "quarry_abi_v1"
	// ImportLog is log(level i32, ptr i32, len i32): a UTF-8 message.
	ImportLog = "log"
	// ImportConfig is config(ptr i32, cap i32) -> len i32: the host copies
	// the plugin's configuration (JSON) to [ptr, ptr+cap) if it fits, and
	// returns its length either way.
	ImportConfig = "config"
)

// Log levels.
const (
	LevelDebug = 0
	LevelInfo  = 1
	LevelWarn  = 2
	LevelError = 3
)

// Status is the first byte of every response.
const (
	StatusOK = 0
	// StatusError: the rest of the response is a UTF-8 error message.
	StatusError = 1
)

// Rewrite response flags: which fields the rewriter set.
const (
	FlagQ           = 1 << 0
	FlagQuery       = 1 << 1
	FlagFilter      = 1 << 2
	FlagRerankDepth = 1 << 3
)

// Value kinds in a rank request.
const (
	KindMissing = 0
	KindNumber  = 1
	KindString  = 2
	KindBool    = 3
	KindList    = 4
)

// Column encodings of a rank request's fields.
const (
	// ColumnValues: one value (kind byte first) per candidate.
	ColumnValues = 0
	// ColumnNumbers: one f64 per candidate, NaN where missing.
	ColumnNumbers = 1
)

// ErrMalformed reports bytes that are not a valid message. The decoders
// wrap it with the rule broken and where, e.g. "entry 3: NaN score" or
// "truncated at byte 46 (want 8 more bytes for entry 3's score)"; branch
// on it with errors.Is.
var ErrMalformed = errors.New("malformed plugin message")

// RewriteRequest is the rewrite hook's input.
//
//	q, query, filter, context: u32 length + bytes (query, filter and
//	context are JSON; empty when absent)
//	size, from: u32
type RewriteRequest struct {
	Q       string
	Query   []byte
	Filter  []byte
	Context []byte
	Size    uint32
	From    uint32
}

// RewriteResponse is the rewrite hook's output after the status byte:
//
//	flags u8, then for each flag set, in order: q, query, filter (u32
//	length + bytes), rerank depth (u32)
type RewriteResponse struct {
	Flags       uint8
	Q           string
	Query       []byte
	Filter      []byte
	RerankDepth uint32
}

// Value is one stored field of a candidate.
type Value struct {
	Kind uint8
	Num  float64
	Str  string
	Bool bool
	List []Value
}

// Candidate is one hit given to a ranker.
type Candidate struct {
	ID     string
	Score  float64
	Values []Value // one per RankRequest.Fields
}

// RankRequest is the rank hook's input:
//
//	q, context: u32 length + bytes
//	field count u32, then each field name (u32 length + bytes)
//	candidate count n u32, the ids' total size u32 (each id's u32 length
//	included), then n ids (u32 length + bytes), then n scores (f64),
//	then one column per field: ColumnNumbers, zero bytes up to an offset
//	(from the request's start) that is a multiple of 8, and n f64 (NaN:
//	missing); or ColumnValues and n values, each a kind u8, then number
//	f64 | string (u32 + bytes) | bool u8 | list (u32 count + values) |
//	nothing
type RankRequest struct {
	Q          string
	Context    []byte
	Fields     []string
	Candidates []Candidate
}

// Ranked is one entry of a rank response.
type Ranked struct {
	Index uint32 // into RankRequest.Candidates
	Score float64
}

// RankResponse after the status byte: flags u8, count u32, then each
// entry: index u32, score f64. The entries are the final order (with
// RankSortByScore: the host sorts them by score, highest first, ties in
// the given order); candidates left out are dropped. An index must be
// below the candidate count and appear once; a score must be finite (NaN
// and ±Inf are refused).
type RankResponse struct {
	Flags  uint8
	Ranked []Ranked
}

// RankSortByScore asks the host to sort a rank response by score.
const RankSortByScore = 1 << 0

// Little-endian encoding helpers.

func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

func appendBytes(b []byte, s []byte) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

func appendString(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

func appendF64(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// reader decodes with bounds checks: malformed input is an error, never a
// panic, and costs at most its own size. An error names the rule broken
// and where, in bytes from the message's start.
type reader struct {
	data []byte // the whole message
	pos  int    // the next byte to read
	err  error
	// item and index say whose field is read next, for errors: "entry"
	// and 3 make "entry 3's score"; "" reads the message's own fields.
	// field, when above 0, is 1 + the rank request's field a value is of.
	item  string
	index int
	field int
}

// malformed is ErrMalformed with what is wrong.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// fail records the first error.
func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = malformed(format, args...)
	}
}

// name is what, qualified by the item being read.
func (r *reader) name(what string) string {
	switch {
	case r.item == "":
		return what
	case r.field > 0:
		return fmt.Sprintf("%s %d's field %d %s", r.item, r.index, r.field-1, what)
	}
	return fmt.Sprintf("%s %d's %s", r.item, r.index, what)
}

func (r *reader) left() int { return len(r.data) - r.pos }

// nbytes is "1 byte" or "n bytes".
func nbytes(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// moreBytes is "1 more byte" or "n more bytes".
func moreBytes[N int | uint64](n N) string {
	if n == 1 {
		return "1 more byte"
	}
	return fmt.Sprintf("%d more bytes", n)
}

// take returns the next n bytes, or nil and an error naming what was cut
// short.
func (r *reader) take(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(r.left()) {
		r.fail("truncated at byte %d (want %s for %s)", len(r.data), moreBytes(n-uint64(r.left())), r.name(what))
		return nil
	}
	b := r.data[r.pos : r.pos+int(n) : r.pos+int(n)]
	r.pos += int(n)
	return b
}

func (r *reader) u8(what string) uint8 {
	if b := r.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u32(what string) uint32 {
	if b := r.take(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) f64(what string) float64 {
	if b := r.take(8, what); b != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return 0
}

// bytes reads a u32 length and that many bytes. The length's name is
// made only for an error: a string built per field read cost a Go guest
// an allocation each, most of a no-op call's decoding (BenchmarkGoEntry).
func (r *reader) bytes(what string) []byte {
	if r.err == nil && r.left() < 4 {
		r.take(4, what+"'s length") // the error
	}
	if r.err != nil {
		return nil
	}
	n := binary.LittleEndian.Uint32(r.data[r.pos:])
	r.pos += 4
	return r.take(uint64(n), what)
}

func (r *reader) str(what string) string { return string(r.bytes(what)) }

// count reads a count of items each at least min bytes long, refusing one
// the rest of the message cannot hold (so a count never makes a decoder
// allocate more than the message's size).
func (r *reader) count(min int, what string) int {
	n := r.u32(what)
	if r.err == nil && uint64(n)*uint64(min) > uint64(r.left()) {
		r.fail("truncated at byte %d (%s %d needs at least %s)", len(r.data), r.name(what), n, moreBytes(uint64(n)*uint64(min)-uint64(r.left())))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// done checks that the whole message was read.
func (r *reader) done(what string) error {
	if r.err == nil && r.left() != 0 {
		r.fail("%s after the end of the %s (it ends at byte %d, not %d)", nbytes(r.left()), what, r.pos, len(r.data))
	}
	return r.err
}
