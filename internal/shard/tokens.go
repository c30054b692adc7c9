package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/quarrysearch/quarry/internal/querystats"
)

// Token totals: BM25's average field length in Quarry is the number of
// tokens in a field over live documents, divided by the live documents
// (Lucene's definition). scorch keeps no such total (its "field
// cardinality" counts distinct terms per segment), so a shard counts it
// from the postings.
//
// Scorch segments are immutable: a segment's count is made once, the first
// time a query reads the field, by walking the field's postings: the total
// and each document's own number of tokens (4 bytes a document). A
// segment's deletions only grow, so the tokens of its deleted documents are
// summed from those per-document numbers and cached by the deletion
// count. A merge makes a new segment, counted once in turn; segments that
// left the index are dropped from the cache. The total is therefore a
// function of the live documents alone, whatever the merges, updates,
// deletes, snapshots and generation swaps in between.
//
// Counting a segment walks its postings: about 60 ns a token
// (BenchmarkTokenCount), so a merge into a large segment would make the
// first query that reads the field wait for it. A replica therefore counts
// the fields queries have read in the background, as segments appear
// (Replica.warmLoop), and a searcher counts a new generation's before it
// swaps it in (Warm); the query path counts only what these have
// not reached yet.

// tokenCache holds the per-segment counts of one index.
type tokenCache struct {
	mu     sync.Mutex
	segs   map[uint64]*segTokens // by scorch segment id, unique in an index
	fields map[string]bool       // fields queries have read: the ones to warm
}

type segTokens struct {
	mu     sync.Mutex
	fields map[string]*fieldTokens
}

// fieldTokens is one field's count in one segment.
type fieldTokens struct {
	total uint64
	lens  []uint32 // tokens per document number

	mu      sync.Mutex
	delCard uint64 // deleted documents the sum below is for
	delSum  uint64
}

func newTokenCache() *tokenCache {
	return &tokenCache{segs: map[uint64]*segTokens{}, fields: map[string]bool{}}
}

// liveTokens returns the tokens of field in the live documents of snap.
func (c *tokenCache) liveTokens(snap *scorch.IndexSnapshot, field string) (uint64, error) {
	c.mu.Lock()
	c.fields[field] = true
	c.mu.Unlock()
	segs := snap.Segments()
	var total uint64
	for _, ss := range segs {
		ft, err := c.segment(ss.Id()).field(context.Background(), ss.Segment(), field)
		if err != nil {
			return 0, fmt.Errorf("count tokens of field %q in segment %d: %w", field, ss.Id(), err)
		}
		total += ft.total - ft.deleted(ss)
	}
	c.sweep(segs)
	return total, nil
}

// LiveTokens is liveTokens for a shard's querystats.Reader: reader is the
// scorch snapshot it wraps (false for another reader).
func (c *tokenCache) LiveTokens(reader index.IndexReader, field string) (uint64, bool, error) {
	snap, ok := reader.(*scorch.IndexSnapshot)
	if !ok {
		return 0, false, nil
	}
	n, err := c.liveTokens(snap, field)
	return n, true, err
}

var _ querystats.TokenCounter = (*tokenCache)(nil)

// warmFields lists the fields queries have read.
func (c *tokenCache) warmFields() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.fields))
	for f := range c.fields {
		out = append(out, f)
	}
	return out
}

// warm counts fields in every segment of snap that has no count yet (and
// remembers them as fields to warm).
func (c *tokenCache) warm(ctx context.Context, snap *scorch.IndexSnapshot, fields []string) error {
	c.mu.Lock()
	for _, f := range fields {
		c.fields[f] = true
	}
	c.mu.Unlock()
	for _, ss := range snap.Segments() {
		for _, f := range fields {
			if _, err := c.segment(ss.Id()).field(ctx, ss.Segment(), f); err != nil {
				return fmt.Errorf("count tokens of field %q in segment %d: %w", f, ss.Id(), err)
			}
		}
	}
	c.sweep(snap.Segments())
	return nil
}

func (c *tokenCache) segment(id uint64) *segTokens {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.segs[id]
	if s == nil {
		s = &segTokens{fields: map[string]*fieldTokens{}}
		c.segs[id] = s
	}
	return s
}

// sweep drops the counts of segments no longer in the index once the cache
// holds many more than the index has (a reader on an older snapshot that
// still needs one counts it again).
func (c *tokenCache) sweep(live []*scorch.SegmentSnapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.segs) <= 2*len(live)+8 {
		return
	}
	keep := make(map[uint64]bool, len(live))
	for _, ss := range live {
		keep[ss.Id()] = true
	}
	for id := range c.segs {
		if !keep[id] {
			delete(c.segs, id)
		}
	}
}

// field returns the count of field in seg, counting it on first use
// (until ctx ends).
func (s *segTokens) field(ctx context.Context, seg segment.Segment, field string) (*fieldTokens, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ft := s.fields[field]; ft != nil {
		return ft, nil
	}
	ft, err := countTokens(ctx, seg, field)
	if err != nil {
		return nil, err
	}
	s.fields[field] = ft
	return ft, nil
}

// deleted returns the tokens of field in the segment's deleted documents.
func (ft *fieldTokens) deleted(ss *scorch.SegmentSnapshot) uint64 {
	del := ss.Deleted()
	if del == nil || del.IsEmpty() {
		return 0
	}
	card := del.GetCardinality()
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if card != ft.delCard {
		var sum uint64
		it := del.Iterator()
		for it.HasNext() {
			if d := it.Next(); int(d) < len(ft.lens) {
				sum += uint64(ft.lens[d])
			}
		}
		ft.delCard, ft.delSum = card, sum
	}
	return ft.delSum
}

// countTokens walks every posting of field in seg, deleted documents
// included: the sum of the term frequencies, in all and per document. It
// gives up when ctx ends.
func countTokens(ctx context.Context, seg segment.Segment, field string) (*fieldTokens, error) {
	ft := &fieldTokens{}
	dict, err := seg.Dictionary(field)
	if err != nil {
		return nil, err
	}
	if dict == nil {
		return ft, nil
	}
	ft.lens = make([]uint32, seg.Count())
	it := dict.AutomatonIterator(nil, nil, nil)
	var pl segment.PostingsList
	var pi segment.PostingsIterator
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		de, err := it.Next()
		if err != nil {
			return nil, err
		}
		if de == nil {
			break
		}
		if pl, err = dict.PostingsList([]byte(de.Term), nil, pl); err != nil {
			return nil, err
		}
		pi = pl.Iterator(true, false, false, pi)
		for {
			p, err := pi.Next()
			if err != nil {
				return nil, err
			}
			if p == nil {
				break
			}
			f := p.Frequency()
			ft.total += f
			if n := p.Number(); n < uint64(len(ft.lens)) {
				ft.lens[n] += uint32(f)
			}
		}
	}
	return ft, nil
}

// warmEvery is how often a replica looks for new segments to count.
const warmEvery = 200 * time.Millisecond

// tokens returns the replica's token cache (nil for an index that is not
// Quarry's index type).
func (r *Replica) tokens() *tokenCache {
	idx, err := r.acquire()
	if err != nil {
		return nil
	}
	adv, err := idx.Advanced()
	r.mu.RUnlock()
	if err != nil {
		return nil
	}
	if si, ok := adv.(*statsIndex); ok {
		return si.tokens
	}
	return nil
}

// TokenFields lists the fields whose token totals queries have read on the
// replica: what a replica that replaces it should count first.
func (r *Replica) TokenFields() []string {
	if c := r.tokens(); c != nil {
		return c.warmFields()
	}
	return nil
}

// Warm readies the replica for the queries from serves (nil: its own
// queries), so that they do not wait and load less: it counts the token
// totals of the fields from's queries have read in every segment, and
// makes columns of the fields from's searches asked for (a searcher calls
// it on a new generation before swapping it in).
func (r *Replica) Warm(ctx context.Context, from *Replica) error {
	var fields []string
	if from != nil {
		fields = from.TokenFields()
		if cols := from.columns(); cols != nil {
			if own := r.columns(); own != nil {
				own.want(cols.wanted())
			}
		}
	}
	return r.warm(ctx, fields)
}

// columns returns the replica's column cache (nil for an index that is
// not Quarry's index type).
func (r *Replica) columns() *columnCache {
	idx, err := r.acquire()
	if err != nil {
		return nil
	}
	defer r.mu.RUnlock()
	return columnsOf(idx)
}

// warm counts fields (nil: those queries have read) in the replica's
// current segments, and makes the columns of the fields searches have
// asked for in segments that lack them (columns.go).
func (r *Replica) warm(ctx context.Context, fields []string) error {
	idx, err := r.acquire()
	if err != nil {
		return err
	}
	defer r.mu.RUnlock()
	adv, err := idx.Advanced()
	if err != nil {
		return err
	}
	si, ok := adv.(*statsIndex)
	if !ok {
		return nil
	}
	if fields == nil {
		fields = si.tokens.warmFields()
	}
	snap, closeSnap, err := openSnapshot(idx)
	if err != nil {
		return err
	}
	defer closeSnap()
	if snap == nil {
		return nil
	}
	if len(fields) > 0 {
		if err := si.tokens.warm(ctx, snap, fields); err != nil {
			return err
		}
	}
	return si.columns.build(ctx, func() (*scorch.IndexSnapshot, func(), error) { return openSnapshot(idx) })
}

// openSnapshot opens idx's current scorch snapshot (nil for an index that is
// not scorch); the caller closes it.
func openSnapshot(idx bleve.Index) (*scorch.IndexSnapshot, func(), error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, nil, err
	}
	reader, err := adv.Reader()
	if err != nil {
		return nil, nil, err
	}
	closeReader := func() { reader.Close() }
	inner := reader
	if sr, ok := reader.(*querystats.Reader); ok {
		inner = sr.IndexReader
	}
	snap, _ := inner.(*scorch.IndexSnapshot)
	return snap, closeReader, nil
}

// warmLoop counts, in the background, the fields queries have read in
// every segment that appears (a batch, a merge), until ctx ends. Segments
// already counted cost a map lookup each.
func (r *Replica) warmLoop(ctx context.Context) {
	defer close(r.warmDone)
	t := time.NewTicker(warmEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.warm(ctx, nil); err != nil && ctx.Err() == nil && !IsClosed(err) {
			r.cfg.Logger.Warn("counting token totals or making columns in the background failed; queries count and load them", "err", err)
		}
	}
}

// IndexStats returns Quarry's scoring statistics of one scorch index (any
// bleve index type built on scorch) as bleve's search.BM25Stats, to pass
// as a search request's PreSearchData under search.BM25PreSearchDataKey:
// the live document count and, per field (every field of the index when
// fields is empty), the tokens in live documents. One bleve index searched
// with them scores as Quarry does at any shard count; quarry bench's
// bleve setup uses it.
func IndexStats(idx bleve.Index, fields ...string) (*search.BM25Stats, error) {
	snap, closeSnap, err := openSnapshot(idx)
	if err != nil {
		return nil, fmt.Errorf("index statistics: %w", err)
	}
	defer closeSnap()
	if snap == nil {
		return nil, errors.New("index statistics: not a scorch index")
	}
	docs, err := snap.DocCount()
	if err != nil {
		return nil, fmt.Errorf("index statistics: %w", err)
	}
	if len(fields) == 0 {
		if fields, err = snap.Fields(); err != nil {
			return nil, fmt.Errorf("index statistics: %w", err)
		}
	}
	// bleve's optimization of an unscored filter reads its terms as one
	// searcher of field "*", which asks for statistics and scores nothing.
	out := &search.BM25Stats{DocCount: float64(docs), FieldCardinality: map[string]int{"*": 0}}
	c := newTokenCache()
	for _, f := range fields {
		n, err := c.liveTokens(snap, f)
		if err != nil {
			return nil, fmt.Errorf("index statistics: %w", err)
		}
		out.FieldCardinality[f] = int(n)
	}
	return out, nil
}
