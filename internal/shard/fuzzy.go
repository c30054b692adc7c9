package shard

import (
	"container/heap"

	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"github.com/blevesearch/vellum/levenshtein"

	"github.com/quarrysearch/quarry/internal/querystats"
)

// FuzzyDict walks field's dictionary in every segment of reader (a scorch
// snapshot; ok false for another reader) with a, the process's cached
// automaton (querystats), so that a shard's statistics phase builds no
// automaton of its own (scorch's FieldDictFuzzyAutomaton builds one
// each time).
func (c *tokenCache) FuzzyDict(reader index.IndexReader, field string, a *levenshtein.DFA, prefix string) (index.FieldDict, bool, error) {
	snap, ok := reader.(*scorch.IndexSnapshot)
	if !ok {
		return nil, false, nil
	}
	fd, err := newSegmentsFuzzyDict(snap, field, a, prefix)
	return fd, true, err
}

var _ querystats.FuzzyDicts = (*tokenCache)(nil)

// segmentsFuzzyDict is a fuzzy field dictionary over a scorch snapshot's
// segments, matched by a given automaton: scorch's own
// (IndexSnapshot.FieldDictFuzzyAutomaton) builds the automaton itself.
// Each segment's dictionary is walked by the automaton (the terms within
// its distance, each with its edit distance) and the walks are merged in
// term order, a term in several segments given once with its counts
// summed, as scorch's IndexSnapshotFieldDict does.
type segmentsFuzzyDict struct {
	cursors     []*fuzzyCursor // each segment's walk, at its next term; a heap by term
	entry       index.DictEntry
	cardinality int
	bytesRead   uint64
}

// omitCount is a segment dictionary's walk that leaves DictEntry.Count
// unread, which fuzzy candidates do not use (zap's, as scorch uses it).
type omitCount interface {
	AutomatonIteratorOmitCount(a segment.Automaton, startKeyInclusive, endKeyExclusive []byte) segment.DictionaryIterator
}

type fuzzyCursor struct {
	itr  segment.DictionaryIterator
	curr index.DictEntry
}

// newSegmentsFuzzyDict walks field's dictionary in every segment of snap
// with a, from prefix on (empty: every term).
func newSegmentsFuzzyDict(snap *scorch.IndexSnapshot, field string, a *levenshtein.DFA, prefix string) (*segmentsFuzzyDict, error) {
	var start, end []byte
	if prefix != "" {
		start = []byte(prefix)
		end = querystats.PrefixEnd(start)
	}
	d := &segmentsFuzzyDict{}
	for _, ss := range snap.Segments() {
		dict, err := ss.Segment().Dictionary(field)
		if err != nil {
			return nil, err
		}
		if dict == nil {
			continue
		}
		if r, ok := dict.(segment.DiskStatsReporter); ok {
			d.bytesRead += r.BytesRead()
		}
		d.cardinality += dict.Cardinality()
		var itr segment.DictionaryIterator
		if oc, ok := dict.(omitCount); ok {
			itr = oc.AutomatonIteratorOmitCount(a, start, end) // the counts are not read
		} else {
			itr = dict.AutomatonIterator(a, start, end)
		}
		next, err := itr.Next()
		if err != nil {
			return nil, err
		}
		if next != nil {
			d.cursors = append(d.cursors, &fuzzyCursor{itr: itr, curr: *next})
		}
	}
	heap.Init(d)
	return d, nil
}

func (d *segmentsFuzzyDict) Len() int { return len(d.cursors) }
func (d *segmentsFuzzyDict) Less(i, j int) bool {
	return d.cursors[i].curr.Term < d.cursors[j].curr.Term
}
func (d *segmentsFuzzyDict) Swap(i, j int) { d.cursors[i], d.cursors[j] = d.cursors[j], d.cursors[i] }
func (d *segmentsFuzzyDict) Push(x any)    { d.cursors = append(d.cursors, x.(*fuzzyCursor)) }
func (d *segmentsFuzzyDict) Pop() any {
	x := d.cursors[len(d.cursors)-1]
	d.cursors = d.cursors[:len(d.cursors)-1]
	return x
}

// advance moves the first cursor on.
func (d *segmentsFuzzyDict) advance() error {
	next, err := d.cursors[0].itr.Next()
	if err != nil {
		return err
	}
	if next == nil {
		heap.Pop(d)
	} else {
		d.cursors[0].curr = *next
		heap.Fix(d, 0)
	}
	return nil
}

// Next returns the next term in order (nil at the end).
func (d *segmentsFuzzyDict) Next() (*index.DictEntry, error) {
	if len(d.cursors) == 0 {
		return nil, nil
	}
	d.entry = d.cursors[0].curr
	if err := d.advance(); err != nil {
		return nil, err
	}
	for len(d.cursors) > 0 && d.cursors[0].curr.Term == d.entry.Term {
		d.entry.Count += d.cursors[0].curr.Count
		if err := d.advance(); err != nil {
			return nil, err
		}
	}
	return &d.entry, nil
}

func (d *segmentsFuzzyDict) Close() error      { return nil }
func (d *segmentsFuzzyDict) Cardinality() int  { return d.cardinality }
func (d *segmentsFuzzyDict) BytesRead() uint64 { return d.bytesRead }
