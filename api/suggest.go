package api

import (
	"strings"
	"unicode"
)

// SuggestRequest asks for the words of Field that complete the last word
// of a search's q: the terms of Field that start with it (as Field's
// analyser makes the word), most documents first, ties in term order;
// with Typos, also the terms within its typos (TypoOneFrom and
// TypoTwoFrom letters; the first letter as typed). Each shard reads at
// most the index's query.limits.max_terms terms of Field in term order
// (DefaultSuggestScan without one), so a short word on a large index
// gets the most frequent of the first terms it starts. Suggest from a
// field whose analyser keeps words whole (standard, keyword, or a
// dynamic string's KeywordSuffix sub-field): a stemming one's terms are
// stems ("noodl").
type SuggestRequest struct {
	Field string `json:"field"`
	// Size is how many suggestions (default DefaultSuggestSize, at most
	// MaxSuggestSize).
	Size  int  `json:"size,omitempty"`
	Typos bool `json:"typos,omitempty"`
}

// Suggestion sizes, and how many terms a shard reads for one without a
// max_terms limit.
const (
	DefaultSuggestSize = 5
	MaxSuggestSize     = 50
	DefaultSuggestScan = 10000
)

// EffectiveSize is the request's Size, its default filled in.
func (s *SuggestRequest) EffectiveSize() int {
	if s.Size == 0 {
		return DefaultSuggestSize
	}
	return s.Size
}

// SuggestWord is the word of q suggestions complete: its last run of
// letters and digits, as typed ("" for none).
func SuggestWord(q string) string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	if len(words) == 0 {
		return ""
	}
	return words[len(words)-1]
}

// validate checks a search's suggest against its q (query: it gives a
// query, not q).
func (s *SuggestRequest) validate(q string, query bool) error {
	switch {
	case s.Field == "":
		return BadRequest("suggest.field is required: the field whose words complete q's last word")
	case s.Size < 0 || s.Size > MaxSuggestSize:
		return BadRequest("suggest.size must be 0 (the default, %d) to %d, got %d", DefaultSuggestSize, MaxSuggestSize, s.Size)
	case query || SuggestWord(q) == "":
		return BadRequest("suggest completes the last word of q: give a q with a word in it")
	}
	return nil
}
