// Package spelling is the logic of the spelling rewriter plugin
// (examples/plugins/spelling, its WebAssembly build): it corrects each word
// of the user's text to the nearest word of a vocabulary (one edit away: a
// letter inserted, deleted, changed or two swapped).
//
// Configuration:
//
//	{"vocabulary": ["noodles", "spicy", "burger", "pizza"]}
//
// The logic is a library so that the same code also runs natively, next to
// its WebAssembly build (Hooks, for plugins.LoadNative and `quarry bench`).
package spelling

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/quarrysearch/quarry/sdk"
)

// Config is the plugin's configuration.
type Config struct {
	Vocabulary []string `json:"vocabulary"`
}

// MaxWordBytes is the longest vocabulary word, in bytes (lower case). The
// index of a word's deletions holds as many keys as the word has bytes,
// each nearly as long: a word of n bytes costs about n² bytes, so a
// vocabulary's index is at most MaxWordBytes times its own size.
const MaxWordBytes = 64

// Speller corrects words against a vocabulary. It is read only once made,
// so calls may run concurrently.
type Speller struct {
	vocab map[string]bool
	// words is the vocabulary, lower case, each word once.
	words []string
	// near maps each word of the vocabulary, and each with one byte
	// deleted, to the words it came from (indexes into words): a word one
	// edit from a vocabulary word shares a key with it (see Correct).
	near map[string][]int32
	// minLen and maxLen bound the words' lengths in bytes.
	minLen, maxLen int
}

// New makes a Speller from a configuration (JSON; empty: no vocabulary,
// nothing is corrected).
func New(config []byte) (*Speller, error) {
	var c Config
	if len(config) > 0 {
		if err := json.Unmarshal(config, &c); err != nil {
			return nil, fmt.Errorf("spelling configuration: %w", err)
		}
	}
	s := &Speller{vocab: make(map[string]bool, len(c.Vocabulary)), near: make(map[string][]int32)}
	for _, w := range c.Vocabulary {
		lw := strings.ToLower(w)
		if len(lw) > MaxWordBytes {
			return nil, fmt.Errorf("spelling configuration: vocabulary word %.20q… is %d bytes, at most %d", lw, len(lw), MaxWordBytes)
		}
		if s.vocab[lw] {
			continue
		}
		s.vocab[lw] = true
		id := int32(len(s.words))
		s.words = append(s.words, lw)
		if len(s.words) == 1 || len(lw) < s.minLen {
			s.minLen = len(lw)
		}
		s.maxLen = max(s.maxLen, len(lw))
		s.add(lw, id)
		for i := range len(lw) {
			s.add(lw[:i]+lw[i+1:], id)
		}
	}
	return s, nil
}

// add files word id under key, once.
func (s *Speller) add(key string, id int32) {
	ids := s.near[key]
	if len(ids) > 0 && ids[len(ids)-1] == id {
		return // a doubled letter deleted either way
	}
	s.near[key] = append(ids, id)
}

// Correct returns w, or the first vocabulary word one edit away from it
// (lower case). Edits are ranked in one order: at each position, a letter
// deleted, two swapped, then each letter a–z put in place of the one
// there and inserted before it; the word made by the earliest edit wins.
//
// It does not try every edit (a word of 7 letters has 390): a vocabulary
// word one edit away shares a key of near with the word, itself or with
// one byte deleted (a deletion: the word deleted is the vocabulary word;
// an insertion: the word is the vocabulary word deleted; a change: both
// deleted where they differ; a swap: the word's first swapped letter
// deleted, the vocabulary word's second). So Correct looks up the word
// and its deletions, len+1 lookups with no string made, and ranks the few
// words found (editRank). Words longer or shorter than any vocabulary
// word by more than one are not looked up at all. Only the answer is
// allocated (none: it is the vocabulary's string).
func (s *Speller) Correct(w string) string {
	lw := strings.ToLower(w)
	if s.vocab[lw] || len(lw) < 3 || len(lw) > s.maxLen+1 || len(lw)+1 < s.minLen {
		return w
	}
	best, bestRank := "", -1
	consider := func(ids []int32) {
		for _, id := range ids {
			v := s.words[id]
			if r := editRank(lw, v); r >= 0 && (bestRank < 0 || r < bestRank) {
				best, bestRank = v, r
			}
		}
	}
	consider(s.near[lw])
	var a [64]byte
	edit := a[:0]
	if len(lw) > len(a) {
		edit = make([]byte, 0, len(lw))
	}
	for i := range len(lw) {
		edit = append(append(edit[:0], lw[:i]...), lw[i+1:]...)
		consider(s.near[string(edit)])
	}
	if bestRank < 0 {
		return w
	}
	return best
}

// editRank returns where, in Correct's order of edits, the first edit
// that makes lw into v comes, or -1 if no single edit does. At position
// i, the order is: deletion, swap, then for each letter l of a–z a change
// to l and an insertion of l; ranks are i×54 plus 0, 1, 2+2l, 3+2l. Only
// a–z are changed to or inserted, as Correct's edits do; lw is not in the
// vocabulary, so v != lw.
func editRank(lw, v string) int {
	const perPos = 2 + 2*26
	n := len(lw)
	switch len(v) {
	case n - 1:
		for i := range n {
			if lw[:i] == v[:i] && lw[i+1:] == v[i:] {
				return i * perPos
			}
		}
	case n:
		for i := range n {
			if lw[i] == v[i] {
				continue
			}
			// i is the first difference: a swap at i or a change at i.
			if i+1 < n && lw[i] == v[i+1] && lw[i+1] == v[i] && lw[i+2:] == v[i+2:] {
				return i*perPos + 1
			}
			if l := v[i]; l >= 'a' && l <= 'z' && lw[i+1:] == v[i+1:] {
				return i*perPos + 2 + 2*int(l-'a')
			}
			return -1
		}
	case n + 1:
		for i := 0; i <= n; i++ {
			if lw[:i] != v[:i] {
				break
			}
			if l := v[i]; l >= 'a' && l <= 'z' && lw[i:] == v[i+1:] {
				return i*perPos + 3 + 2*int(l-'a')
			}
		}
	}
	return -1
}

// Rewrite corrects every misspelt word of r.Q.
func (s *Speller) Rewrite(r *sdk.RewriteRequest) error {
	words := strings.Fields(r.Q)
	changed := false
	for i, w := range words {
		if c := s.Correct(w); c != w {
			words[i], changed = c, true
		}
	}
	if changed {
		r.Q = strings.Join(words, " ")
	}
	return nil
}

// Hooks returns the rewriter's hooks for a configuration, with their own
// state: one per instance of the plugin run natively.
func Hooks(config []byte) (*sdk.Hooks, error) {
	s, err := New(config)
	if err != nil {
		return nil, err
	}
	return &sdk.Hooks{Rewrite: s.Rewrite}, nil
}
