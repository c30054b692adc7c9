package sdk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/quarrysearch/quarry/sdk/abi"
)

// RewriteRequest is a search request on its way to the planner. A rewriter
// changes the fields it wants to; what it leaves alone goes on unchanged.
type RewriteRequest struct {
	// Q is the user's raw text.
	Q string
	// Query and Filter are bleve queries in JSON (empty when absent).
	Query  []byte
	Filter []byte
	// Context is the request's free-form context object, JSON (read only).
	Context []byte
	// Size and From are the requested page (read only).
	Size, From int
	// RerankDepth asks every shard for this many candidates, for a ranker
	// later in the pipeline.
	RerankDepth int
}

// RankRequest holds the merged candidates of a search. A ranker sets their
// scores and may reorder or drop them (Candidates is what it leaves).
type RankRequest struct {
	// Q is the (rewritten) text of the search.
	Q string
	// Context is the request's free-form context object, JSON.
	Context []byte
	// Candidates are the merged hits, best first.
	Candidates []*Candidate
	// KeepOrder: when false (the default), candidates are sorted by Score
	// (highest first, stable; the host does it) after the ranker returns;
	// when true, the order of Candidates is the result.
	KeepOrder bool

	fields map[string]int
	cols   []column
}

// Candidate is one hit with its stored fields. Its strings (the ID, and
// field values) are valid during the call only: clone one to keep it.
type Candidate struct {
	ID    string
	Score float64

	index uint32
	req   *RankRequest
}

// column is one field of a rank request: dense numbers read in place from
// the request, or decoded values.
type column struct {
	numbers []byte // 8 bytes a candidate, when numeric
	values  []abi.Value
	numeric bool
}

// Field is a handle on a stored field of a rank request: look it up once
// with RankRequest.Field, then read it from every candidate with NumberOf
// and friends. (The name-taking accessors look the name up each time,
// which is slow in WebAssembly for a thousand candidates.)
type Field int

// NoField is the handle of a field the request does not carry.
const NoField Field = -1

// Field returns the handle of a stored field, or NoField.
func (r *RankRequest) Field(name string) Field {
	if i, ok := r.fields[name]; ok {
		return Field(i)
	}
	return NoField
}

// val returns a candidate's value of field f (a copy; KindMissing if none).
func (c *Candidate) val(f Field) abi.Value {
	if f < 0 || int(f) >= len(c.req.cols) {
		return abi.Value{}
	}
	col := &c.req.cols[f]
	if col.numeric {
		n := math.Float64frombits(binary.LittleEndian.Uint64(col.numbers[c.index*8:]))
		if n != n {
			return abi.Value{}
		}
		return abi.Value{Kind: abi.KindNumber, Num: n}
	}
	return col.values[c.index]
}

func (c *Candidate) value(field string) abi.Value {
	if i, ok := c.req.fields[field]; ok {
		return c.val(Field(i))
	}
	return abi.Value{}
}

// NumberOf returns a numeric field by handle (the first, for a list).
func (c *Candidate) NumberOf(f Field) (float64, bool) {
	if f >= 0 && int(f) < len(c.req.cols) && c.req.cols[f].numeric {
		n := math.Float64frombits(binary.LittleEndian.Uint64(c.req.cols[f].numbers[c.index*8:]))
		return n, n == n
	}
	v := c.val(f)
	return first(&v)
}

func first(v *abi.Value) (float64, bool) {
	if v.Kind == abi.KindNumber {
		return v.Num, true
	}
	if v.Kind == abi.KindList && len(v.List) > 0 && v.List[0].Kind == abi.KindNumber {
		return v.List[0].Num, true
	}
	return 0, false
}

// NumbersOf returns every numeric value of a field by handle.
func (c *Candidate) NumbersOf(f Field) []float64 {
	v := c.val(f)
	return numbers(&v)
}

// AppendNumbersOf appends every numeric value of a field by handle to dst
// and returns it: with a dst reused from candidate to candidate (a geo
// point's [lon, lat]), a ranker reads lists without allocating, which
// matters in WebAssembly, where Go's allocator and collector are slow.
func (c *Candidate) AppendNumbersOf(dst []float64, f Field) []float64 {
	if f >= 0 && int(f) < len(c.req.cols) && c.req.cols[f].numeric {
		if n, ok := c.NumberOf(f); ok {
			return append(dst, n)
		}
		return dst
	}
	v := c.val(f)
	if v.Kind == abi.KindNumber {
		return append(dst, v.Num)
	}
	for _, e := range v.List {
		if e.Kind == abi.KindNumber {
			dst = append(dst, e.Num)
		}
	}
	return dst
}

func numbers(v *abi.Value) []float64 {
	if v.Kind == abi.KindNumber {
		return []float64{v.Num}
	}
	var out []float64
	for _, e := range v.List {
		if e.Kind == abi.KindNumber {
			out = append(out, e.Num)
		}
	}
	return out
}

// Number returns a numeric field (the first, for a list).
func (c *Candidate) Number(field string) (float64, bool) {
	v := c.value(field)
	return first(&v)
}

// String returns a text field (the first, for a list).
func (c *Candidate) String(field string) (string, bool) {
	v := c.value(field)
	if v.Kind == abi.KindList && len(v.List) > 0 {
		v = v.List[0]
	}
	if v.Kind != abi.KindString {
		return "", false
	}
	return v.Str, true
}

// Strings returns every text value of a field.
func (c *Candidate) Strings(field string) []string {
	v := c.value(field)
	if v.Kind == abi.KindString {
		return []string{v.Str}
	}
	var out []string
	for _, e := range v.List {
		if e.Kind == abi.KindString {
			out = append(out, e.Str)
		}
	}
	return out
}

// Numbers returns every numeric value of a field (a geopoint is [lon, lat]).
func (c *Candidate) Numbers(field string) []float64 {
	v := c.value(field)
	return numbers(&v)
}

// Bool returns a boolean field.
func (c *Candidate) Bool(field string) (bool, bool) {
	v := c.value(field)
	if v.Kind != abi.KindBool {
		return false, false
	}
	return v.Bool, true
}

// Hooks are a plugin's hooks and the state their calls reuse. The
// registration functions (Rewriter, Ranker, BatchRanker) fill the
// plugin's own Hooks, which the WebAssembly exports (and sdktest) call; a
// host that runs plugin logic natively, side by side with its WebAssembly
// build (plugins.LoadNative), makes a Hooks per instance instead. A Hooks
// serves one call at a time.
type Hooks struct {
	Rewrite func(*RewriteRequest) error
	Rank    func(*RankRequest) error
	// BatchRank, when set, is the rank hook instead of Rank.
	BatchRank func(*Batch) error

	rs rankState
}

// hooks are the plugin's registered hooks.
var hooks Hooks

// Rewriter registers the plugin's rewrite hook. Call it from init.
func Rewriter(fn func(*RewriteRequest) error) { hooks.Rewrite = fn }

// Ranker registers the plugin's rank hook. Call it from init.
func Ranker(fn func(*RankRequest) error) { hooks.Rank = fn }

// HandleRewrite runs the registered rewriter on an encoded request and
// appends the encoded response to out. It is what the wasm export calls;
// sdktest calls it natively.
func HandleRewrite(in, out []byte) []byte { return hooks.HandleRewrite(in, out) }

// HandleRewrite runs h.Rewrite on an encoded request and appends the
// encoded response to out.
func (h *Hooks) HandleRewrite(in, out []byte) []byte {
	var req abi.RewriteRequest
	if err := abi.DecodeRewriteRequest(in, &req); err != nil {
		return abi.AppendError(out, "decode rewrite request: "+err.Error())
	}
	rewriter := h.Rewrite
	if rewriter == nil {
		return abi.AppendError(out, "this plugin has no rewriter (call sdk.Rewriter in init)")
	}
	r := RewriteRequest{Q: req.Q, Query: req.Query, Filter: req.Filter, Context: req.Context, Size: int(req.Size), From: int(req.From)}
	if err := call(func() error { return rewriter(&r) }); err != nil {
		return abi.AppendError(out, err.Error())
	}
	var resp abi.RewriteResponse
	if r.Q != req.Q {
		resp.Flags |= abi.FlagQ
		resp.Q = r.Q
	}
	if !bytes.Equal(r.Query, req.Query) {
		resp.Flags |= abi.FlagQuery
		resp.Query = r.Query
	}
	if !bytes.Equal(r.Filter, req.Filter) {
		resp.Flags |= abi.FlagFilter
		resp.Filter = r.Filter
	}
	if r.RerankDepth > 0 {
		resp.Flags |= abi.FlagRerankDepth
		resp.RerankDepth = uint32(r.RerankDepth)
	}
	return abi.AppendRewriteResponse(out, &resp)
}

// rankState is reused from call to call: a ranker's call allocates nothing
// once the buffers have grown, which matters in WebAssembly, where Go's
// allocator and collector are slow. Strings alias the request and are
// valid during the call only.
type rankState struct {
	req    RankRequest
	fields []string
	cands  []Candidate
	ptrs   []*Candidate
	vals   []abi.Value // backing of the value columns
	lists  []abi.Value
	seen   []bool

	b       Batch
	scores  []float64
	dropped []bool
}

func unsafeBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// decoder reads the rank request in one pass with plain slice indexing:
// in Go's WebAssembly every function call is costly, so the hot loop calls
// nothing it cannot inline.
type decoder struct {
	b   []byte
	pos int
	bad bool
}

func (d *decoder) u32() uint32 {
	if d.pos+4 > len(d.b) {
		d.bad = true
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.pos:])
	d.pos += 4
	return v
}

func (d *decoder) f64() float64 {
	if d.pos+8 > len(d.b) {
		d.bad = true
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.pos:]))
	d.pos += 8
	return v
}

func (d *decoder) str() string {
	n := int(d.u32())
	if d.bad || n > len(d.b)-d.pos {
		d.bad = true
		return ""
	}
	v := unsafeString(d.b[d.pos : d.pos+n])
	d.pos += n
	return v
}

func (s *rankState) value(d *decoder, v *abi.Value, depth int) {
	if d.pos >= len(d.b) {
		d.bad = true
		return
	}
	v.Kind = d.b[d.pos]
	d.pos++
	switch v.Kind {
	case abi.KindMissing:
	case abi.KindNumber:
		v.Num = d.f64()
	case abi.KindString:
		v.Str = d.str()
	case abi.KindBool:
		if d.pos >= len(d.b) {
			d.bad = true
			return
		}
		v.Bool = d.b[d.pos] != 0
		d.pos++
	case abi.KindList:
		n := int(d.u32())
		if depth >= 4 || d.bad || n > len(d.b)-d.pos {
			d.bad = true
			return
		}
		if len(s.lists)+n > cap(s.lists) {
			// A new backing array for the lists from here on: earlier
			// lists keep theirs.
			s.lists = make([]abi.Value, 0, max(2*cap(s.lists), n, 64))
		}
		start := len(s.lists)
		s.lists = s.lists[:start+n]
		v.List = s.lists[start : start+n : start+n]
		for i := range v.List {
			s.value(d, &v.List[i], depth+1)
		}
	default:
		d.bad = true
	}
}

// HandleRank runs the registered ranker on an encoded request and appends
// the encoded response to out.
func HandleRank(in, out []byte) []byte { return hooks.HandleRank(in, out) }

// HandleRank runs h.BatchRank or h.Rank on an encoded request and appends
// the encoded response to out.
func (h *Hooks) HandleRank(in, out []byte) []byte {
	ranker, batchRanker := h.Rank, h.BatchRank
	if ranker == nil && batchRanker == nil {
		return abi.AppendError(out, "this plugin has no ranker (call sdk.Ranker or sdk.BatchRanker in init)")
	}
	s := &h.rs
	d := &decoder{b: in}
	req := &s.req
	*req = RankRequest{fields: req.fields, cols: req.cols}
	req.Q = d.str()
	req.Context = unsafeBytes(d.str())
	nf := int(d.u32())
	if nf > len(in)/4 {
		d.bad = true
	}
	changed := d.bad || nf != len(s.fields)
	s.fields = s.fields[:0]
	for i := 0; i < nf && !d.bad; i++ {
		f := d.str()
		if j, ok := req.fields[f]; !changed && (!ok || j != i) {
			changed = true // a field of another name: the first's index is 0 too
		}
		s.fields = append(s.fields, f)
	}
	if changed || req.fields == nil {
		req.fields = make(map[string]int, nf)
		for i, f := range s.fields {
			req.fields[strings.Clone(f)] = i
		}
	}
	nc := int(d.u32())
	if d.bad || nc > (len(in)-d.pos)/(12+nf) {
		return abi.AppendError(out, "decode rank request: "+abi.ErrMalformed.Error())
	}
	if cap(s.cands) < nc {
		s.cands = make([]Candidate, nc)
		s.ptrs = make([]*Candidate, nc)
		s.seen = make([]bool, nc)
	}
	s.cands, s.ptrs, s.seen = s.cands[:nc], s.ptrs[:nc], s.seen[:nc]
	idsLen := int(d.u32())
	idsAt := d.pos
	if d.bad || idsLen > len(in)-d.pos {
		return abi.AppendError(out, "decode rank request: "+abi.ErrMalformed.Error())
	}
	if batchRanker != nil {
		d.pos += idsLen // a batch reads the ids on demand
	} else {
		for i := range s.cands {
			c := &s.cands[i]
			c.ID = d.str()
			c.index = uint32(i)
			c.req = req
			s.ptrs[i] = c
			s.seen[i] = false
		}
		if d.pos-idsAt != idsLen {
			d.bad = true
		}
	}
	if d.bad || nc*8 > len(in)-d.pos {
		return abi.AppendError(out, "decode rank request: "+abi.ErrMalformed.Error())
	}
	scores := in[d.pos : d.pos+nc*8]
	d.pos += nc * 8
	if batchRanker == nil {
		for i := range s.cands {
			s.cands[i].Score = math.Float64frombits(binary.LittleEndian.Uint64(scores[i*8:]))
		}
	}
	if cap(req.cols) < nf {
		req.cols = make([]column, nf)
	}
	req.cols = req.cols[:nf]
	s.vals, s.lists = s.vals[:0], s.lists[:0]
	for j := range req.cols {
		col := &req.cols[j]
		if d.pos >= len(in) {
			d.bad = true
			break
		}
		kind := in[d.pos]
		d.pos++
		switch kind {
		case abi.ColumnNumbers:
			d.pos += (8 - d.pos%8) % 8 // aligned to 8 from the request's start
			if d.pos > len(in) || nc*8 > len(in)-d.pos {
				d.bad = true
				break
			}
			*col = column{numeric: true, numbers: in[d.pos : d.pos+nc*8]}
			d.pos += nc * 8
		case abi.ColumnValues:
			if len(s.vals)+nc > cap(s.vals) {
				s.vals = make([]abi.Value, 0, max(2*cap(s.vals), nc*nf))
			}
			start := len(s.vals)
			s.vals = s.vals[:start+nc]
			*col = column{values: s.vals[start : start+nc : start+nc]}
			for i := range col.values {
				col.values[i] = abi.Value{}
				s.value(d, &col.values[i], 0)
			}
		default:
			d.bad = true
		}
		if d.bad {
			break
		}
	}
	if d.bad || d.pos != len(in) {
		return abi.AppendError(out, "decode rank request: "+abi.ErrMalformed.Error())
	}
	if batchRanker != nil {
		return s.batch(batchRanker, in, out, idsAt, scores, nc)
	}
	req.Candidates = s.ptrs
	if err := call(func() error { return ranker(req) }); err != nil {
		return abi.AppendError(out, err.Error())
	}
	var flags uint8
	if !req.KeepOrder {
		flags = abi.RankSortByScore // the host sorts: far faster than here
	}
	// The response, written in place: status, flags, count, then 12 bytes
	// an entry.
	n := len(req.Candidates)
	start := len(out)
	out = slices.Grow(out, 6+12*n)[:start+6+12*n]
	out[start], out[start+1] = abi.StatusOK, flags
	binary.LittleEndian.PutUint32(out[start+2:], uint32(n))
	w := out[start+6:]
	for k, c := range req.Candidates {
		if c == nil || c.req != req || int(c.index) >= nc || s.seen[c.index] {
			return abi.AppendError(out[:start], "ranker returned a candidate twice, or one it was not given")
		}
		s.seen[c.index] = true
		binary.LittleEndian.PutUint32(w[k*12:], c.index)
		binary.LittleEndian.PutUint64(w[k*12+4:], math.Float64bits(c.Score))
	}
	return out
}

// Batch is a rank request as columns, for rankers that score every
// candidate with arithmetic over numeric fields: no per-candidate objects,
// numeric fields read in place as arrays. Register one with BatchRanker.
type Batch struct {
	// Q is the (rewritten) text of the search; Context the request's
	// context object, JSON. Valid during the call.
	Q       string
	Context []byte
	// Scores holds each candidate's retrieval score, best first; the
	// ranker overwrites them with its own. Candidates are sorted by these
	// scores afterwards (by the host).
	Scores []float64

	req   *RankRequest
	in    []byte
	idsAt int
	ids   []string // filled on the first ID call
	drop  []bool
}

// Len is the number of candidates.
func (b *Batch) Len() int { return len(b.Scores) }

// Numbers returns a numeric field as an array indexed like Scores (NaN
// where a candidate has no value), read in place from the request: valid
// during the call, not to be written. Nil if the field is absent or not
// numeric (read those with Values).
func (b *Batch) Numbers(field string) []float64 {
	f := b.req.Field(field)
	if f == NoField || !b.req.cols[f].numeric || len(b.Scores) == 0 {
		return nil
	}
	col := b.req.cols[f].numbers
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(col))), len(col)/8)
}

// Value returns candidate i's value of a field of any kind.
func (b *Batch) Value(field string, i int) abi.Value {
	f := b.req.Field(field)
	if f == NoField || i < 0 || i >= len(b.Scores) {
		return abi.Value{}
	}
	c := Candidate{index: uint32(i), req: b.req}
	return c.val(f)
}

// ID returns candidate i's document id (valid during the call).
func (b *Batch) ID(i int) string {
	if b.ids == nil {
		d := &decoder{b: b.in, pos: b.idsAt}
		b.ids = make([]string, len(b.Scores))
		for j := range b.ids {
			b.ids[j] = d.str()
		}
	}
	return b.ids[i]
}

// Drop removes candidate i from the results.
func (b *Batch) Drop(i int) { b.drop[i] = true }

// BatchRanker registers the plugin's rank hook in its batch form (instead
// of Ranker). Call it from init.
func BatchRanker(fn func(*Batch) error) { hooks.BatchRank = fn }

// batch runs the batch ranker and writes its response in place.
func (s *rankState) batch(batchRanker func(*Batch) error, in, out []byte, idsAt int, scores []byte, n int) []byte {
	if cap(s.scores) < n {
		s.scores = make([]float64, n)
		s.dropped = make([]bool, n)
	}
	b := &s.b
	*b = Batch{Q: s.req.Q, Context: s.req.Context, Scores: s.scores[:n], req: &s.req, in: in, idsAt: idsAt, drop: s.dropped[:n]}
	for i := range b.Scores {
		b.Scores[i] = math.Float64frombits(binary.LittleEndian.Uint64(scores[i*8:]))
		b.drop[i] = false
	}
	if err := call(func() error { return batchRanker(b) }); err != nil {
		return abi.AppendError(out, err.Error())
	}
	start := len(out)
	out = slices.Grow(out, 6+12*n)[:start+6+12*n]
	out[start], out[start+1] = abi.StatusOK, abi.RankSortByScore
	w, k := out[start+6:], 0
	for i, sc := range b.Scores {
		if b.drop[i] {
			continue
		}
		binary.LittleEndian.PutUint32(w[k*12:], uint32(i))
		binary.LittleEndian.PutUint64(w[k*12+4:], math.Float64bits(sc))
		k++
	}
	binary.LittleEndian.PutUint32(out[start+2:], uint32(k))
	return out[:start+6+12*k]
}

// call runs a hook, turning a panic into an error.
func call(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("plugin panicked: %v", p)
		}
	}()
	return f()
}
