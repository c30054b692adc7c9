package querystats

import (
	"errors"
	"sync"

	index "github.com/blevesearch/bleve_index_api"
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

// FuzzyDicts walks a fuzzy term's dictionary with a given automaton over
// the segments of a reader (the one a Reader wraps): internal/shard's
// token cache does, for scorch snapshots. ok is false for a reader it
// cannot walk (its own FieldDictFuzzyAutomaton is then used, which builds
// its automaton itself).
type FuzzyDicts interface {
	FuzzyDict(reader index.IndexReader, field string, a *levenshtein.DFA, prefix string) (fd index.FieldDict, ok bool, err error)
}
