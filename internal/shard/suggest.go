package shard

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
)

// suggest answers a Suggest from idx's term dictionary: the terms of the
// field that start with the word as the field's analyser makes it, and,
// with Typos, those within its typos, each with the number of this
// shard's documents that hold it; the Size with the most, ties in term
// order. It reads at most s.Scan terms that start with the word, in term
// order (and maxSuggestTypos within its typos), and stops when ctx ends.
func suggest(ctx context.Context, idx bleve.Index, s *wire.Suggest) (api.FacetResult, error) {
	out := api.FacetResult{Field: s.Field}
	word := suggestPrefix(idx.Mapping(), s)
	if word == "" {
		return out, nil
	}
	snap, closeSnap, err := openSnapshot(idx)
	if err != nil || snap == nil {
		return out, err
	}
	defer closeSnap()
	counts := map[string]int{}
	d, err := snap.FieldDictPrefix(s.Field, []byte(word))
	if err != nil {
		return out, err
	}
	for range max(s.Scan, 1) {
		e, err := d.Next()
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			d.Close()
			return out, err
		}
		if e == nil {
			break
		}
		counts[e.Term] = int(e.Count)
	}
	d.Close()
	if edits := api.TypoEdits(word); s.Typos && edits > 0 {
		// scorch's fuzzy dictionary does not count (DictEntry.Count is
		// 0): each of its terms is looked up again for its count, the
		// first maxSuggestTypos of them.
		first, _ := utf8.DecodeRuneInString(word)
		d, err := snap.FieldDictFuzzy(s.Field, word, edits, string(first))
		if err != nil {
			return out, err
		}
		var typos []string
		for len(typos) < maxSuggestTypos {
			e, err := d.Next()
			if err != nil {
				d.Close()
				return out, err
			}
			if e == nil {
				break
			}
			typos = append(typos, e.Term)
		}
		d.Close()
		for _, term := range typos {
			if _, ok := counts[term]; ok {
				continue
			}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			d, err := snap.FieldDictPrefix(s.Field, []byte(term))
			if err != nil {
				return out, err
			}
			if e, err := d.Next(); err == nil && e != nil && e.Term == term {
				counts[term] = int(e.Count)
			}
			d.Close()
		}
	}
	for term, n := range counts {
		out.Terms = append(out.Terms, api.TermCount{Term: term, Count: n})
	}
	slices.SortFunc(out.Terms, func(a, b api.TermCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Term, b.Term)
	})
	if len(out.Terms) > s.Size {
		for _, t := range out.Terms[s.Size:] {
			out.Other += t.Count
		}
		out.Terms = out.Terms[:s.Size]
	}
	for _, t := range out.Terms {
		out.Total += t.Count
	}
	out.Total += out.Other
	return out, nil
}

// suggestPrefix is what the terms a Suggest finds start with: where the
// field keeps values whole (a keyword analyser, or a dynamic string's
// keyword sub-field: one term, as given), all of q as typed; otherwise
// q's last word as the field's analyser makes it (lower-cased, for a word
// it drops).
func suggestPrefix(m mapping.IndexMapping, s *wire.Suggest) string {
	if isKeywordSubField(m, s.Field) {
		return s.Text
	}
	word := api.SuggestWord(s.Text)
	a := m.AnalyzerNamed(m.AnalyzerNameForPath(s.Field))
	if a == nil {
		return word
	}
	if whole := a.Analyze([]byte(s.Text)); len(whole) == 1 && string(whole[0].Term) == s.Text {
		return s.Text // kept whole: a keyword analyser
	}
	toks := a.Analyze([]byte(word))
	if len(toks) == 0 {
		// A stop word's letters may still start a word ("to", tomato):
		// as most analysers make a word, lower-cased.
		return strings.ToLower(word)
	}
	return string(toks[0].Term)
}

// maxSuggestTypos bounds the terms within a word's typos a suggestion
// counts on one shard.
const maxSuggestTypos = 256
