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

// Speller corrects words against a vocabulary. It is read only once made,
// so calls may run concurrently.
type Speller struct {
	vocab map[string]bool
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
	s := &Speller{vocab: make(map[string]bool, len(c.Vocabulary))}
	for _, w := range c.Vocabulary {
		s.vocab[strings.ToLower(w)] = true
	}
	return s, nil
}

// Correct returns w, or the first vocabulary word one edit away from it
// (lower case). Edits are tried in one order: at each position, a letter
// deleted, two swapped, then each letter a–z put in place of the one
// there and inserted before it. Candidates are built in buffers reused
// from edit to edit (on the stack for words under 64 bytes) and looked up
// without being made strings: only the answer is allocated, which matters
// in WebAssembly, where Go's allocator and collector are slow (a word of
// 7 letters has 390 candidates).
func (s *Speller) Correct(w string) string {
	lw := strings.ToLower(w)
	if s.vocab[lw] || len(lw) < 3 {
		return w
	}
	var a, b, c [64]byte
	edit, sub, ins := a[:0], b[:0], c[:0]
	if len(lw)+1 > len(a) {
		edit, sub, ins = make([]byte, 0, len(lw)+1), make([]byte, 0, len(lw)+1), make([]byte, 0, len(lw)+1)
	}
	for i := 0; i <= len(lw); i++ {
		if i < len(lw) { // deletion
			if edit = append(append(edit[:0], lw[:i]...), lw[i+1:]...); s.vocab[string(edit)] {
				return string(edit)
			}
		}
		if i+1 < len(lw) { // transposition
			if edit = append(append(append(edit[:0], lw[:i]...), lw[i+1], lw[i]), lw[i+2:]...); s.vocab[string(edit)] {
				return string(edit)
			}
		}
		sub = append(sub[:0], lw...)
		ins = append(append(append(ins[:0], lw[:i]...), 0), lw[i:]...)
		for l := byte('a'); l <= 'z'; l++ {
			if i < len(lw) { // substitution
				if sub[i] = l; s.vocab[string(sub)] {
					return string(sub)
				}
			}
			if ins[i] = l; s.vocab[string(ins)] { // insertion
				return string(ins)
			}
		}
	}
	return w
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
