// Command synonyms is a Quarry rewriter plugin: it adds synonyms from its
// configuration to the user's text, so "pop" also finds "soda".
//
// Configuration:
//
//	{"synonyms": {"pop": ["soda"], "chips": ["fries"]}}
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o synonyms.wasm .
package main

import (
	"encoding/json"
	"strings"

	"github.com/quarrysearch/quarry/sdk"
)

type config struct {
	Synonyms map[string][]string `json:"synonyms"`
}

var synonyms map[string][]string

func load() error {
	if synonyms != nil {
		return nil
	}
	var c config
	if b := sdk.Config(); len(b) > 0 {
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
	}
	synonyms = map[string][]string{}
	for k, v := range c.Synonyms {
		synonyms[strings.ToLower(k)] = v
	}
	return nil
}

// Rewrite appends the synonyms of every word of q that has some.
func Rewrite(r *sdk.RewriteRequest) error {
	if err := load(); err != nil {
		return err
	}
	words := strings.Fields(r.Q)
	out := words
	for _, w := range words {
		out = append(out, synonyms[strings.ToLower(w)]...)
	}
	if len(out) > len(words) {
		r.Q = strings.Join(out, " ")
	}
	return nil
}

func init() { sdk.Rewriter(Rewrite) }

func main() {}
