package shard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/api/jsonenc"
)

// Columns: a ranker's candidates are up to a hundred documents a shard,
// each carrying a few short fields (a rating, opening hours, a location)
// and the page's (a name, a price). Loading them from the stored
// documents decompresses each candidate's whole document (zap stores a
// document's fields together): 3 µs a candidate, a tenth of the
// searchers' CPU under the demo pipeline. bleve's own doc values were
// tried and were slower (docs/performance.md, "Where a ranker's
// candidates cost the searchers"): zap decompresses a chunk of a field's
// doc values to read one document's, and a number's doc values hold every
// precision-step term.
//
// So a shard keeps columns of its own, per scorch segment: for each field
// searches ask for, each document's value as JSON, as loadFields would
// write it, in one byte slice with an end offset a document; and each
// document's id, to check a hit against. A segment is immutable, so its
// columns are made once, in the background (Replica.warmLoop, a pass over
// its stored documents), and read by document number: a hit's fields are
// a few slice reads. A search never waits for a column: a hit whose
// segment has none yet is loaded from its stored document as before.
//
// A column holds short values only: a field whose values average over
// maxColumnValueBytes a document in a segment (a description, a body) is
// not kept, nor one of a kind bleve formats its own way (a date, an IP
// address, a geo shape); those are loaded from stored documents. The
// columns of a replica are bounded by Config.ColumnBytes in all: past it,
// new segments get none (and their hits load as before) until merges
// drop old ones.

// maxColumnValueBytes is the most bytes a column's values may average a
// document, in JSON.
const maxColumnValueBytes = 64

// maxColumnFields is the most fields a replica keeps columns of: the
// fields searches ask for past it load from stored documents (a caller
// asking for ever new fields would otherwise keep the background busy
// making columns of them).
const maxColumnFields = 32

// columnCache holds the columns of one index's segments.
type columnCache struct {
	maxBytes atomic.Int64  // bound on bytes, all segments; <0: none kept
	bytes    atomic.Int64  // bytes held
	served   atomic.Uint64 // hits whose fields were read from columns
	touched  atomic.Uint32 // touchRows' last sum: kept, so its loads are not dead code

	mu     sync.RWMutex
	segs   map[uint64]*segColumns // by scorch segment id, unique in an index
	fields map[string]bool        // fields searches asked for: to keep
	skip   map[string]string      // fields not kept, and why
	full   map[uint64]bool        // segments whose columns did not fit the bound

	buildMu sync.Mutex // one build at a time
}

// segColumns are one segment's columns.
type segColumns struct {
	ids  column                             // each document's _id
	cols atomic.Pointer[map[string]*column] // by field; replaced, never changed
}

// column is one field's values in one segment: document n's value, as
// JSON (several values of a document: an array), is vals[ends[n]:ends[n+1]];
// empty when the document has none.
type column struct {
	vals []byte
	ends []uint32
}

func (c *column) value(n uint64) []byte {
	if n+1 >= uint64(len(c.ends)) {
		return nil
	}
	return c.vals[c.ends[n]:c.ends[n+1]]
}

func (c *column) size() int64 { return int64(len(c.vals) + 4*len(c.ends)) }

// columnsOf returns idx's column cache (nil for an index that is not a
// Quarry shard or a point in time of one).
func columnsOf(idx bleve.Index) *columnCache {
	adv, err := idx.Advanced()
	if err != nil {
		return nil
	}
	switch i := adv.(type) {
	case *statsIndex:
		return i.columns
	case *pitIndex:
		return i.columns
	}
	return nil
}

// ColumnStats is what a replica's columns hold and have served.
type ColumnStats struct {
	Bytes  int64  // bytes held (at most Config.ColumnBytes)
	Served uint64 // hits whose fields were read from columns
}

// Columns returns the replica's column figures (zero for an index that is
// not Quarry's index type).
func (r *Replica) Columns() ColumnStats {
	c := r.columns()
	if c == nil {
		return ColumnStats{}
	}
	return ColumnStats{Bytes: c.bytes.Load(), Served: c.served.Load()}
}

// DefaultColumnBytes is Config.ColumnBytes's default.
const DefaultColumnBytes = 64 << 20

func newColumnCache() *columnCache {
	c := &columnCache{segs: map[uint64]*segColumns{}, fields: map[string]bool{}, skip: map[string]string{}, full: map[uint64]bool{}}
	c.maxBytes.Store(DefaultColumnBytes)
	return c
}

// want notes fields a search asked for: the ones to keep as columns. It
// reports whether every one of them may be (a field not kept, or "*",
// loads from stored documents).
func (c *columnCache) want(fields []string) bool {
	c.mu.RLock()
	ok, known := true, true
	for _, f := range fields {
		if f == "*" || c.skip[f] != "" {
			ok = false
		}
		if !c.fields[f] {
			known = false
		}
	}
	c.mu.RUnlock()
	if known || !ok || c.maxBytes.Load() < 0 {
		return ok
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range fields {
		if !c.fields[f] {
			if len(c.fields) >= maxColumnFields {
				c.skip[f] = fmt.Sprintf("the replica keeps columns of %d fields already", maxColumnFields)
				ok = false
				continue
			}
			c.fields[f] = true
		}
	}
	return ok
}

// wanted lists the fields to keep.
func (c *columnCache) wanted() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.fields))
	for f := range c.fields {
		if c.skip[f] == "" {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// build makes the columns of the wanted fields that the segments of the
// snapshot open returns lack, one pass over each such segment's stored
// documents, until ctx ends or the bound on bytes is reached; it then
// drops the columns of segments no longer in the index. The snapshot is
// opened once the build is this one's turn (builds run one at a time):
// one opened before, while another build made the columns of a segment
// a merge had just written, would spend this build on segments merged
// away.
func (c *columnCache) build(ctx context.Context, open func() (*scorch.IndexSnapshot, func(), error)) error {
	c.buildMu.Lock()
	defer c.buildMu.Unlock()
	snap, closeSnap, err := open()
	if err != nil {
		return err
	}
	defer closeSnap()
	if snap == nil {
		return nil
	}
	fields := c.wanted()
	segs := snap.Segments()
	defer c.sweep(segs)
	if len(fields) == 0 || c.maxBytes.Load() < 0 {
		return nil
	}
	for _, ss := range segs {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.mu.RLock()
		sc, full := c.segs[ss.Id()], c.full[ss.Id()]
		c.mu.RUnlock()
		if full {
			continue
		}
		var have map[string]*column
		if sc != nil {
			have = *sc.cols.Load()
		}
		var missing []string
		for _, f := range fields {
			if have[f] == nil {
				missing = append(missing, f)
			}
		}
		if len(missing) == 0 {
			continue
		}
		// At least the end offsets: a segment that cannot fit is not read.
		least := int64(4 * (ss.Segment().Count() + 1) * uint64(len(missing)+1))
		if c.bytes.Load()+least > c.maxBytes.Load() {
			c.noteFull(ss.Id())
			continue
		}
		ids, built, err := c.buildSegment(ctx, ss, missing, sc == nil, c.maxBytes.Load()-c.bytes.Load())
		var over *overBound
		if errors.As(err, &over) {
			c.noteFull(ss.Id()) // stopped as it passed the bound: its hits load as before
			continue
		}
		if err != nil {
			return fmt.Errorf("columns of segment %d: %w", ss.Id(), err)
		}
		if len(ids.vals) > math.MaxUint32 { // past what an end offset holds
			c.noteFull(ss.Id())
			continue
		}
		var size int64
		for _, col := range built {
			size += col.size()
		}
		if sc == nil {
			size += ids.size()
		}
		if c.bytes.Load()+size > c.maxBytes.Load() {
			c.noteFull(ss.Id()) // over the bound: its hits load as before
			continue
		}
		c.bytes.Add(size)
		next := make(map[string]*column, len(have)+len(built))
		for f, col := range have {
			next[f] = col
		}
		for f, col := range built {
			next[f] = col
		}
		if sc == nil {
			sc = &segColumns{ids: ids}
			sc.cols.Store(&next)
			c.mu.Lock()
			c.segs[ss.Id()] = sc
			c.mu.Unlock()
		} else {
			sc.cols.Store(&next)
		}
	}
	return nil
}

// noteFull records that segment id's columns do not fit the bound: it
// is not read again until columns of other segments are dropped.
func (c *columnCache) noteFull(id uint64) {
	c.mu.Lock()
	c.full[id] = true
	c.mu.Unlock()
}

// buildSegment reads fields (and, with withIDs, the ids) of every
// document of ss, deleted ones included, into columns. A field it finds
// too long, or of a kind it does not keep, is left out of built and
// noted in c.skip.
// overBound is buildSegment's error when the columns being built pass
// the bytes left: the build stops there, holding at most a stride of
// documents' values more than the bound.
type overBound struct {
	visited, docs uint64
}

func (e *overBound) Error() string {
	return fmt.Sprintf("the columns pass the bytes left after %d of %d documents", e.visited, e.docs)
}

// buildStride is how many documents buildSegment reads between two
// checks of its context and of the bytes it holds.
const buildStride = 256

func (c *columnCache) buildSegment(ctx context.Context, ss *scorch.SegmentSnapshot, fields []string, withIDs bool, budget int64) (ids column, built map[string]*column, err error) {
	n := ss.Segment().Count()
	cols := make([]column, len(fields))
	counts := make([]int, len(fields)) // values of the current document
	starts := make([]int, len(fields)) // where the current document's begin
	for i := range cols {
		cols[i].ends = make([]uint32, 1, n+1)
	}
	if withIDs {
		ids.ends = make([]uint32, 1, n+1)
	}
	odd := make([]string, len(fields)) // why a field is not kept
	var scratch []byte
	visit := func(name string, typ byte, val []byte, _ []uint64) bool {
		if name == "_id" {
			if withIDs {
				ids.vals = append(ids.vals, val...)
			}
			return true
		}
		i, found := slices.BinarySearch(fields, name)
		if !found || odd[i] != "" {
			return true
		}
		var ok bool
		if scratch, ok = appendStored(scratch[:0], typ, val); !ok {
			if typ == 'd' || typ == 'i' || typ == 's' {
				odd[i] = fmt.Sprintf("its values are of a kind bleve formats itself (%q)", typ)
			}
			return true // a value that does not decode: bleve leaves it out too
		}
		col := &cols[i]
		if counts[i] > 0 {
			col.vals = append(col.vals, ',')
		}
		col.vals = append(col.vals, scratch...)
		counts[i]++
		return true
	}
	for doc := range n {
		if doc%buildStride == 0 {
			if err := ctx.Err(); err != nil {
				return column{}, nil, err
			}
			if held := ids.size() + columnsSize(cols, odd); held > budget {
				return column{}, nil, &overBound{visited: doc, docs: n}
			}
			for i := range cols { // a field past its average bound stops here
				if odd[i] == "" && len(cols[i].vals) > maxColumnValueBytes*int(n)+1024 {
					odd[i] = fmt.Sprintf("its values average over %d bytes a document", maxColumnValueBytes)
					cols[i].vals = nil
				}
			}
		}
		for i := range cols {
			counts[i], starts[i] = 0, len(cols[i].vals)
		}
		if err := ss.VisitDocument(doc, visit); err != nil {
			return column{}, nil, err
		}
		for i := range cols {
			col := &cols[i]
			if counts[i] > 1 { // an array, as loadFields writes one
				col.vals = append(col.vals, 0)
				copy(col.vals[starts[i]+1:], col.vals[starts[i]:len(col.vals)-1])
				col.vals[starts[i]] = '['
				col.vals = append(col.vals, ']')
			}
			col.ends = append(col.ends, uint32(len(col.vals)))
		}
		if withIDs {
			ids.ends = append(ids.ends, uint32(len(ids.vals)))
		}
	}
	built = make(map[string]*column, len(fields))
	for i, f := range fields {
		if odd[i] == "" && len(cols[i].vals) > maxColumnValueBytes*int(n)+1024 {
			odd[i] = fmt.Sprintf("its values average over %d bytes a document", maxColumnValueBytes)
		}
		if odd[i] == "" && len(cols[i].vals) > math.MaxUint32 { // past what an end offset holds
			odd[i] = "its values come to over 4 GiB in one segment"
		}
		if odd[i] != "" {
			c.mu.Lock()
			c.skip[f] = odd[i]
			c.mu.Unlock()
			continue
		}
		built[f] = &cols[i]
	}
	return ids, built, nil
}

// columnsSize is what cols hold, those of fields found odd aside.
func columnsSize(cols []column, odd []string) int64 {
	var n int64
	for i := range cols {
		if odd[i] == "" {
			n += cols[i].size()
		}
	}
	return n
}

// sweep drops the columns of segments no longer in the index (a reader
// on an older snapshot, a point in time, loads its hits from stored
// documents): those missing from live, the segments of a snapshot, that
// are older than its newest; a newer one was written since live was
// taken, and keeps its columns.
func (c *columnCache) sweep(live []*scorch.SegmentSnapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := make(map[uint64]bool, len(live))
	newest := uint64(0)
	for _, ss := range live {
		keep[ss.Id()] = true
		newest = max(newest, ss.Id())
	}
	for id, sc := range c.segs {
		// scorch's segment ids only grow: one missing from live below its
		// newest is gone; one above it is newer than live, and stays.
		if !keep[id] && id < newest {
			size := sc.ids.size()
			for _, col := range *sc.cols.Load() {
				size += col.size()
			}
			c.bytes.Add(-size)
			delete(c.segs, id)
			clear(c.full) // room made: those may fit now
		}
	}
	for id := range c.full {
		if !keep[id] {
			delete(c.full, id)
		}
	}
}

// segments are the first document number of each of segs (scorch's
// global number is the segment's offset plus its local one; the last
// offset is the snapshot's count) and each one's columns (nil: none).
func (c *columnCache) segments(segs []*scorch.SegmentSnapshot) (offsets []uint64, cols []*segColumns) {
	offsets = make([]uint64, len(segs)+1)
	cols = make([]*segColumns, len(segs))
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, ss := range segs {
		offsets[i+1] = offsets[i] + ss.Segment().Count()
		cols[i] = c.segs[ss.Id()]
	}
	return offsets, cols
}

// Lookup returns the ids of reader's documents (a scorch snapshot) in
// segments with columns, by document number, for querystats.Reader's
// ExternalID: bleve's collector asks every returned hit's id, which scorch
// reads from the document's stored fields. nil when reader is not a
// snapshot or no segment of it has columns.
func (c *columnCache) Lookup(reader index.IndexReader) func(index.IndexInternalID) (string, bool) {
	snap, ok := reader.(*scorch.IndexSnapshot)
	if !ok {
		return nil
	}
	segs := snap.Segments()
	offsets, cols := c.segments(segs)
	if !slices.ContainsFunc(cols, func(sc *segColumns) bool { return sc != nil }) {
		return nil
	}
	return func(id index.IndexInternalID) (string, bool) {
		if len(id) != 8 {
			return "", false
		}
		num := id.Value()
		s, _ := slices.BinarySearch(offsets, num+1) // offsets[s-1] <= num < offsets[s]
		if s == 0 || s > len(segs) || cols[s-1] == nil {
			return "", false
		}
		v := cols[s-1].ids.value(num - offsets[s-1])
		if len(v) == 0 {
			return "", false
		}
		return string(v), true
	}
}

// load writes the fields (sorted, without duplicates) of the hits it can
// from columns into doc, as loadFields does, and marks them in served:
// a hit whose document is live in a segment of snap with columns of every
// field, and whose id there is its own (a hit deleted or updated since
// the search, or moved by a merge, is left to loadFields, which looks its
// id up). It returns how many it served.
func (c *columnCache) load(snap *scorch.IndexSnapshot, hits []*search.DocumentMatch, fields []string, doc *docJSON, at [][2]int, served []bool, budget *replyBudget) (int, error) {
	segs := snap.Segments()
	offsets, cols := c.segments(segs)
	// Each hit's row: its segment's columns of the fields (nil: a field
	// without its column there) and its number in the segment.
	rows := make([][]*column, len(segs))
	places := make([]rowPlace, len(hits))
	// The rows' columns, side by side: one allocation for the first few
	// segments hits fall in, not one a segment (a row is never changed,
	// so one left in an array append outgrew stays valid).
	slab := make([]*column, 0, (len(fields)+1)*min(len(segs), len(hits), 8))
	for h, hit := range hits {
		if len(hit.IndexInternalID) != 8 {
			continue
		}
		num := hit.IndexInternalID.Value()
		s, _ := slices.BinarySearch(offsets, num+1) // offsets[s-1] <= num < offsets[s]
		if s == 0 || s > len(segs) || cols[s-1] == nil {
			continue
		}
		if rows[s-1] == nil {
			have := *cols[s-1].cols.Load()
			start := len(slab)
			slab = append(slab, &cols[s-1].ids)
			for _, f := range fields {
				slab = append(slab, have[f])
			}
			rows[s-1] = slab[start:len(slab):len(slab)]
		}
		if !slices.Contains(rows[s-1], nil) {
			places[h] = rowPlace{row: rows[s-1], local: num - offsets[s-1], seg: s - 1}
		}
	}
	c.touched.Store(touchRows(places))
	if doc.out == nil {
		per := 2 // {}
		for _, f := range fields {
			per += len(f) + 4 + 12 // "f":, and a number's digits
		}
		doc.out = make([]byte, 0, len(hits)*per)
	}
	n := 0
	for h, hit := range hits {
		p := places[h]
		if p.row == nil {
			continue
		}
		if string(p.row[0].value(p.local)) != hit.ID {
			continue // the index changed since the search: look it up by id
		}
		if del := segs[p.seg].Deleted(); del != nil && del.Contains(uint32(p.local)) {
			continue // deleted or updated since: look its id up
		}
		served[h] = true
		n++
		start := len(doc.out)
		for i, col := range p.row[1:] {
			v := col.value(p.local)
			if len(v) == 0 {
				continue
			}
			if len(doc.out) == start {
				doc.out = append(doc.out, '{')
			} else {
				doc.out = append(doc.out, ',')
			}
			doc.out = append(jsonenc.AppendString(doc.out, fields[i]), ':')
			doc.out = append(doc.out, v...)
			if !budget.take(len(fields[i]) + len(v)) {
				return n, errReplyTooLarge
			}
		}
		if len(doc.out) > start {
			doc.out = append(doc.out, '}')
			at[h] = [2]int{start, len(doc.out)}
		}
	}
	c.served.Add(uint64(n))
	return n, nil
}

// rowPlace is where a hit's values are in the columns: row is its
// segment's ids column then one column a field (nil: not served from
// columns), local its number in segment seg.
type rowPlace struct {
	row   []*column
	local uint64
	seg   int
}

// touchRows reads, before load copies them, where each hit's values start
// in each of its columns and then their first bytes, in loops whose loads
// do not wait on one another, so the processor fetches them from memory
// many at a time; the copy then finds them in cache. A searcher's columns
// are rarely in cache between searches (its shards, the other requests):
// in the profile of `quarry bench`'s closed loop with the demo pipeline,
// load's time a search was 85 µs, most of it the copy's memmove waiting
// on memory, and 37–58 µs in three runs with touchRows
// (docs/performance.md; BenchmarkLoadFieldsCold makes the cold columns
// on its own, noisily). In cache, the passes cost a few µs.
// It returns a sum of what it read, which load keeps (c.touched) so the
// loads are not dropped as dead code.
func touchRows(places []rowPlace) uint32 {
	var x uint32
	for _, p := range places {
		for _, col := range p.row {
			if p.local+1 < uint64(len(col.ends)) {
				x += col.ends[p.local]
			}
		}
	}
	for _, p := range places {
		for _, col := range p.row {
			if p.local+1 < uint64(len(col.ends)) {
				if i := col.ends[p.local]; i < uint32(len(col.vals)) {
					x += uint32(col.vals[i])
				}
			}
		}
	}
	return x
}
