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
// (lower case).
func (s *Speller) Correct(w string) string {
	lw := strings.ToLower(w)
	if s.vocab[lw] || len(lw) < 3 {
		return w
	}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for i := 0; i <= len(lw); i++ {
		if i < len(lw) && s.vocab[lw[:i]+lw[i+1:]] { // deletion
			return lw[:i] + lw[i+1:]
		}
		if i+1 < len(lw) { // transposition
			if t := lw[:i] + string(lw[i+1]) + string(lw[i]) + lw[i+2:]; s.vocab[t] {
				return t
			}
		}
		for _, c := range letters {
			if i < len(lw) { // substitution
				if t := lw[:i] + string(c) + lw[i+1:]; s.vocab[t] {
					return t
				}
			}
			if t := lw[:i] + string(c) + lw[i:]; s.vocab[t] { // insertion
				return t
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
