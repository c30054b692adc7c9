// Package synonyms is the logic of the synonyms rewriter plugin
// (examples/plugins/synonyms, its WebAssembly build): it adds synonyms from
// its configuration to the user's text, so "pop" also finds "soda".
//
// Configuration:
//
//	{"synonyms": {"pop": ["soda"], "chips": ["fries"]}}
//
// The logic is a library so that the same code also runs natively, next to
// its WebAssembly build (Hooks, for plugins.LoadNative and `quarry bench`).
package synonyms

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/quarrysearch/quarry/sdk"
)

// Config is the plugin's configuration.
type Config struct {
	Synonyms map[string][]string `json:"synonyms"`
}

// Expander adds synonyms. It is read only once made, so calls may run
// concurrently.
type Expander struct {
	synonyms map[string][]string // by lower-case word
}

// New makes an Expander from a configuration (JSON; empty: no synonyms).
func New(config []byte) (*Expander, error) {
	var c Config
	if len(config) > 0 {
		if err := json.Unmarshal(config, &c); err != nil {
			return nil, fmt.Errorf("synonyms configuration: %w", err)
		}
	}
	e := &Expander{synonyms: make(map[string][]string, len(c.Synonyms))}
	for k, v := range c.Synonyms {
		e.synonyms[strings.ToLower(k)] = v
	}
	return e, nil
}

// Rewrite appends the synonyms of every word of r.Q that has some.
func (e *Expander) Rewrite(r *sdk.RewriteRequest) error {
	words := strings.Fields(r.Q)
	out := words
	for _, w := range words {
		out = append(out, e.synonyms[strings.ToLower(w)]...)
	}
	if len(out) > len(words) {
		r.Q = strings.Join(out, " ")
	}
	return nil
}

// Hooks returns the rewriter's hooks for a configuration, with their own
// state: one per instance of the plugin run natively.
func Hooks(config []byte) (*sdk.Hooks, error) {
	e, err := New(config)
	if err != nil {
		return nil, err
	}
	return &sdk.Hooks{Rewrite: e.Rewrite}, nil
}
