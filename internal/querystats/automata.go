package querystats

import (
	"container/heap"
	"errors"
	"slices"
	"sync"

	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"github.com/blevesearch/vellum/levenshtein"
)

// Levenshtein automata: a fuzzy term (typo tolerance) needs a DFA of the
// words within its edit distance, and building one is costly (vellum
// fills a 1 KiB transition table a state: 6% of a shard's CPU under the
// bench's queries, a fifth of them misspelt). scorch builds one for each
// fuzzy searcher, so one misspelt word cost a DFA per field it is looked
// for in, per shard, per phase (statistics and search) of every query. A
// shard's reader takes them from here instead, where the shards of a
// process share them: built once for a (term, distance) while the cache
// holds it.

// maxCachedAutomata bounds the cache: a DFA of a long word at distance 2
// holds hundreds of states of 1 KiB.
const maxCachedAutomata = 64

// maxCachedTermBytes: longer terms' automata are built and not kept.
const maxCachedTermBytes = 32

type automatonKey struct {
	term      string
	fuzziness uint8
}

var automata = struct {
	mu    sync.Mutex
	byKey map[automatonKey]*levenshtein.DFA
	order []automatonKey // oldest first: the next to go
	built int            // DFAs built, for tests
}{byKey: map[automatonKey]*levenshtein.DFA{}}

// levBuilders are vellum's builders at distance 1 and 2, as scorch makes
// them (transpositions count one edit); made once, on first use.
var levBuilders = sync.OnceValues(func() ([2]*levenshtein.LevenshteinAutomatonBuilder, error) {
	var b [2]*levenshtein.LevenshteinAutomatonBuilder
	var err error
	for i := range b {
		if b[i], err = levenshtein.NewLevenshteinAutomatonBuilder(uint8(i+1), true); err != nil {
			return b, err
		}
	}
	return b, nil
})

// errFuzziness is scorch's refusal of a distance over 2, in its words.
var errFuzziness = errors.New("fuzziness exceeds the max limit")

// levAutomaton returns the DFA of the words within fuzziness edits of
// term, from the cache or built (and kept).
func levAutomaton(term string, fuzziness int) (*levenshtein.DFA, error) {
	if fuzziness < 1 || fuzziness > 2 {
		return nil, errFuzziness
	}
	key := automatonKey{term, uint8(fuzziness)}
	automata.mu.Lock()
	if a := automata.byKey[key]; a != nil {
		automata.mu.Unlock()
		return a, nil
	}
	automata.built++
	automata.mu.Unlock()
	b, err := levBuilders()
	if err != nil {
		return nil, err
	}
	a, err := b[fuzziness-1].BuildDfa(term, uint8(fuzziness))
	if err != nil || len(term) > maxCachedTermBytes {
		return a, err
	}
	automata.mu.Lock()
	defer automata.mu.Unlock()
	if _, ok := automata.byKey[key]; !ok {
		if len(automata.order) >= maxCachedAutomata {
			delete(automata.byKey, automata.order[0])
			automata.order = append(automata.order[:0], automata.order[1:]...)
		}
		automata.byKey[key] = a
		automata.order = append(automata.order, key)
	}
	return a, nil
}

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
		end = prefixEnd(start)
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

// prefixEnd is the first key after every key starting with prefix (nil:
// none), as scorch computes it.
func prefixEnd(prefix []byte) []byte {
	end := slices.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
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
