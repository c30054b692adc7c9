package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/registry"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/highlight"
	simpleFragmenter "github.com/blevesearch/bleve/v2/search/highlight/fragmenter/simple"
	simpleHighlighter "github.com/blevesearch/bleve/v2/search/highlight/highlighter/simple"

	"github.com/quarrysearch/quarry/api"
)

// Highlighting uses bleve's simple highlighter (a field's best fragment
// of about 200 characters around its most matched terms) with a fragment
// formatter of Quarry's, segmentsFormatter: it writes a fragment as the
// JSON array of its pieces, text and matched term in turn, so the tags and
// the escaping can be the request's (bleve's own formatters take them
// from the index's configuration, and one escapes always).
const (
	segmentsFormatterName = "quarry-segments"
	highlighterName       = "quarry-segments"
	// cutMark is the highlighter's separator, which it puts where a
	// fragment cuts its field's text: NUL, which the JSON of the pieces
	// never holds (json.Marshal escapes it); written as "…".
	cutMark = "\x00"
)

func init() {
	if err := registry.RegisterFragmentFormatter(segmentsFormatterName, func(map[string]any, *registry.Cache) (highlight.FragmentFormatter, error) {
		return segmentsFormatter{}, nil
	}); err != nil {
		panic(err)
	}
	if err := registry.RegisterHighlighter(highlighterName, func(_ map[string]any, cache *registry.Cache) (highlight.Highlighter, error) {
		fragmenter, err := cache.FragmenterNamed(simpleFragmenter.Name)
		if err != nil {
			return nil, err
		}
		formatter, err := cache.FragmentFormatterNamed(segmentsFormatterName)
		if err != nil {
			return nil, err
		}
		return simpleHighlighter.NewHighlighter(fragmenter, formatter, cutMark), nil
	}); err != nil {
		panic(err)
	}
}

// segmentsFormatter formats a fragment as a JSON array of strings: the
// text before the first matched term, the term, the text after it, and
// so on, ending with text (perhaps ""): even indexes are text, odd ones
// terms. It picks the terms as bleve's html formatter does.
type segmentsFormatter struct{}

func (segmentsFormatter) Format(f *highlight.Fragment, locations highlight.TermLocations) string {
	var segs []string
	curr := f.Start
	for _, loc := range locations {
		if loc == nil || !loc.ArrayPositions.Equals(f.ArrayPositions) || loc.Start < curr {
			continue
		}
		if loc.End > f.End {
			break
		}
		segs = append(segs, string(f.Orig[curr:loc.Start]), string(f.Orig[loc.Start:loc.End]))
		curr = loc.End
	}
	segs = append(segs, string(f.Orig[curr:f.End]))
	b, _ := json.Marshal(segs)
	return string(b)
}

// highlightHits finds each hit's best fragment of each field hl names,
// written with its tags and encoder, into the hit's Fragments; their
// bytes count in budget. The hits were found with IncludeLocations.
func highlightHits(ctx context.Context, idx bleve.Index, hits []*search.DocumentMatch, hl *api.HighlightRequest, budget *replyBudget) error {
	h, err := bleve.Config.Cache.HighlighterNamed(highlighterName)
	if err != nil {
		return fmt.Errorf("highlighter: %w", err)
	}
	pre, post := hl.Tags()
	escape := hl.Encoder != api.EncoderNone
	for _, hit := range hits {
		if err := ctx.Err(); err != nil {
			return err
		}
		doc, err := idx.Document(hit.ID)
		if err != nil {
			return fmt.Errorf("highlight %q: %w", hit.ID, err)
		}
		if doc == nil {
			continue // deleted since the search: nothing to show
		}
		var out search.FieldFragmentMap
		for _, field := range hl.Fields {
			if len(hit.Locations[field]) == 0 {
				continue
			}
			for _, raw := range h.BestFragmentsInField(hit, doc, field, 1) {
				frag, err := writeFragment(raw, pre, post, escape)
				if err != nil {
					return err
				}
				if !budget.take(len(field) + len(frag) + 8) {
					return errReplyTooLarge
				}
				if out == nil {
					out = search.FieldFragmentMap{}
				}
				out[field] = append(out[field], frag)
			}
		}
		hit.Fragments = out // BestFragmentsInField left its raw pieces there
	}
	return nil
}

// writeFragment turns segmentsFormatter's pieces into the fragment the
// request asked for: matched terms between pre and post, every piece
// HTML-escaped if escape.
func writeFragment(raw, pre, post string, escape bool) (string, error) {
	body, cutBefore := strings.CutPrefix(raw, cutMark)
	body, cutAfter := strings.CutSuffix(body, cutMark)
	var segs []string
	if err := json.Unmarshal([]byte(body), &segs); err != nil {
		return "", fmt.Errorf("highlight fragment: %w", err)
	}
	var b strings.Builder
	if cutBefore {
		b.WriteString("…")
	}
	for i, s := range segs {
		if escape {
			s = html.EscapeString(s)
		}
		if i%2 == 1 {
			b.WriteString(pre)
			b.WriteString(s)
			b.WriteString(post)
		} else {
			b.WriteString(s)
		}
	}
	if cutAfter {
		b.WriteString("…")
	}
	return b.String(), nil
}
