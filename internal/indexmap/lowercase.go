package indexmap

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/registry"
	"golang.org/x/text/unicode/norm"
)

// LowerCaseType is the type of Quarry's lower-case token filter, which a
// mapping made by Canonical defines under bleve's own name, to_lower, so
// that bleve's analyzers (standard, en and the other languages', and a
// custom analyzer naming to_lower) use it.
//
// bleve's to_lower (v2.6.3) breaks a word in which a letter's lower case
// is shorter than the letter (İ → i, ẞ → ß, the Kelvin sign → k): it
// shortens the word in place and then stops moving the letters that need
// no change, so "İstanbul" is indexed as "i\xb0stanbu", which is not
// UTF-8, matches other words and not "istanbul". This filter lower-cases
// as bleve means to (Go's unicode.ToLower, a final capital sigma as ς).
// A mapping stored before it (without the definition) keeps bleve's
// filter, so an existing index analyses its queries as it analysed its
// documents; recreate it to take the fix.
const LowerCaseType = "quarry_to_lower"

// FoldType is the type of the filter a mapping made by Canonical now
// defines as to_lower: Unicode compatibility normalization (NFKC) then
// LowerCaseType's lower case, the way Elasticsearch's ICU normalizer
// (nfkc_cf) folds text. The same word spelled in composed or decomposed
// form ("café" as é, or e and a combining accent, as macOS writes file
// names), in full-width letters (ｐｉｚｚａ, as Japanese keyboards type
// them), with a ligature (ﬁ) or as a superscript is one term, so a query
// finds it however either side spelled it. Mappings stored with
// LowerCaseType keep it: their documents were indexed without the
// normalization, and their queries must be analysed as their documents
// were.
const FoldType = "quarry_fold"

func init() {
	for name, f := range map[string]analysis.TokenFilter{LowerCaseType: lowerCaseFilter{}, FoldType: foldFilter{}} {
		if err := registry.RegisterTokenFilter(name, func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
			return f, nil
		}); err != nil {
			panic(err)
		}
	}
}

type lowerCaseFilter struct{}

func (lowerCaseFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	for _, token := range input {
		token.Term = toLower(token.Term)
	}
	return input
}

type foldFilter struct{}

func (foldFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	for _, token := range input {
		if !norm.NFKC.IsNormal(token.Term) { // ASCII and most text: no copy
			token.Term = norm.NFKC.Bytes(token.Term)
		}
		token.Term = toLower(token.Term)
	}
	return input
}

// toLower lower-cases s in place when no letter's lower case is longer
// than the letter, else in a new slice.
func toLower(s []byte) []byte {
	j := 0
	for i := 0; i < len(s); {
		r, wid := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, wid = utf8.DecodeRune(s[i:])
		}
		l := unicode.ToLower(r)
		if l == 'σ' && i+wid == len(s) && r == 'Σ' {
			l = 'ς' // a word's final sigma
		}
		switch lwid := utf8.RuneLen(l); {
		case l == r:
			// Unchanged (a byte that is not UTF-8 too).
			if j < i {
				copy(s[j:], s[i:i+wid])
			}
			j += wid
		case lwid > wid:
			// Longer (Ⱥ → ⱥ): the rest goes to a new slice.
			rest := bytes.ToLower(s[i:])
			out := make([]byte, j, j+len(rest))
			copy(out, s[:j])
			return append(out, rest...)
		default:
			utf8.EncodeRune(s[j:], l)
			j += lwid
		}
		i += wid
	}
	return s[:j]
}

// overrideLowerCase makes m's to_lower Quarry's filter (FoldType), unless
// the mapping defines a to_lower of its own (LowerCaseType, in a mapping
// stored before FoldType, among them).
func overrideLowerCase(tokenFilters map[string]map[string]any) map[string]map[string]any {
	if _, own := tokenFilters[lowercase.Name]; own {
		return tokenFilters
	}
	if tokenFilters == nil {
		tokenFilters = map[string]map[string]any{}
	}
	tokenFilters[lowercase.Name] = map[string]any{"type": FoldType}
	return tokenFilters
}
