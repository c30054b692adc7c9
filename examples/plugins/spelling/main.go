// Command spelling is a Quarry rewriter plugin: it corrects each word of
// the user's text to the nearest word of a vocabulary in its configuration
// (one edit away: a letter inserted, deleted, changed or two swapped).
//
// Configuration:
//
//	{"vocabulary": ["noodles", "spicy", "burger", "pizza"]}
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o spelling.wasm .
package main

import (
	"encoding/json"
	"strings"

	"github.com/quarrysearch/quarry/sdk"
)

var vocab map[string]bool

func load() error {
	if vocab != nil {
		return nil
	}
	var c struct {
		Vocabulary []string `json:"vocabulary"`
	}
	if b := sdk.Config(); len(b) > 0 {
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
	}
	vocab = make(map[string]bool, len(c.Vocabulary))
	for _, w := range c.Vocabulary {
		vocab[strings.ToLower(w)] = true
	}
	return nil
}

// correct returns w, or the first vocabulary word one edit away from it.
func correct(w string) string {
	lw := strings.ToLower(w)
	if vocab[lw] || len(lw) < 3 {
		return w
	}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for i := 0; i <= len(lw); i++ {
		if i < len(lw) && vocab[lw[:i]+lw[i+1:]] { // deletion
			return lw[:i] + lw[i+1:]
		}
		if i+1 < len(lw) { // transposition
			if t := lw[:i] + string(lw[i+1]) + string(lw[i]) + lw[i+2:]; vocab[t] {
				return t
			}
		}
		for _, c := range letters {
			if i < len(lw) { // substitution
				if t := lw[:i] + string(c) + lw[i+1:]; vocab[t] {
					return t
				}
			}
			if t := lw[:i] + string(c) + lw[i:]; vocab[t] { // insertion
				return t
			}
		}
	}
	return w
}

// Rewrite corrects every misspelt word of q.
func Rewrite(r *sdk.RewriteRequest) error {
	if err := load(); err != nil {
		return err
	}
	words := strings.Fields(r.Q)
	changed := false
	for i, w := range words {
		if c := correct(w); c != w {
			words[i], changed = c, true
		}
	}
	if changed {
		r.Q = strings.Join(words, " ")
	}
	return nil
}

func init() { sdk.Rewriter(Rewrite) }

func main() {}
