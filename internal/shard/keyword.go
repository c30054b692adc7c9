package shard

import (
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/single"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/api"
)

// Keyword sub-fields of dynamic strings.
//
// A string field the index's mapping does not name is indexed as bleve's
// dynamic mapping indexes it: as text, through the default analyser, so
// "GPL-2.0" is the words gpl and 2.0, and a facet on the field counts
// words ("gpl 426, 2 307, 3 229, bsd, clause"). Like Elasticsearch's
// dynamic mapping, a replica also indexes each such value of
// api.KeywordMaxBytes or less whole, as one exact term, in the field
// <path>.keyword (api.KeywordSuffix): facets, term queries and sorts on
// it see whole values. The sub-field is indexed with doc values (facets
// and sorts read them) and not stored (the value is the field's own), and
// it is kept out of the composite field _all, so no score changes.

// mapDocument maps data (a decoded JSON document) to the document bleve
// indexes as id, as bleve's Batch.Index would, and adds the keyword
// sub-fields of its dynamic strings.
func mapDocument(m mapping.IndexMapping, id string, data any) (*document.Document, error) {
	doc := document.NewDocument(id)
	if err := m.MapDocument(doc, data); err != nil {
		return nil, err
	}
	var added map[string]bool
	n := len(doc.Fields)
	for _, f := range doc.Fields[:n] {
		tf, ok := f.(*document.TextField)
		if !ok || len(tf.Value()) > api.KeywordMaxBytes || !tf.Options().IsIndexed() || m.FieldMappingForPath(tf.Name()).Type != "" {
			continue // not a dynamic string of a keyword's size
		}
		name := tf.Name() + api.KeywordSuffix
		if added == nil {
			added = map[string]bool{}
		}
		added[name] = true
		doc.AddField(document.NewTextFieldCustom(name, tf.ArrayPositions(), tf.Value(), index.IndexField|index.DocValues, keywordAnalyzer))
	}
	if added != nil {
		excludeFromComposites(doc, doc.Fields[:n], added)
	}
	return doc, nil
}

// keywordAnalyzer makes a value one term, as it is (bleve's keyword
// analyser).
var keywordAnalyzer analysis.Analyzer = &analysis.DefaultAnalyzer{Tokenizer: single.NewSingleTokenTokenizer()}

// excludeFromComposites makes each of doc's composite fields (_all) over
// the same fields of mapped as before, and none of added. A composite
// field says which fields it takes only by taking them (Compose), so each
// mapped field is offered to a copy of it: the copy's length grows when
// it takes the field.
func excludeFromComposites(doc *document.Document, mapped []document.Field, added map[string]bool) {
	for i, cf := range doc.CompositeFields {
		exclude := make([]string, 0, len(added)+1)
		for name := range added {
			exclude = append(exclude, name)
		}
		for _, f := range mapped { // a name twice (an array) is excluded twice: no matter
			probe := *cf
			probe.Compose(f.Name(), 1, nil)
			if probe.AnalyzedLength() == cf.AnalyzedLength() {
				exclude = append(exclude, f.Name())
			}
		}
		doc.CompositeFields[i] = document.NewCompositeFieldWithIndexingOptions(cf.Name(), true, nil, exclude, cf.Options())
	}
}

// isKeywordSubField reports whether field is a dynamic string's keyword
// sub-field, which m does not declare (its terms are values as given).
func isKeywordSubField(m mapping.IndexMapping, field string) bool {
	return strings.HasSuffix(field, api.KeywordSuffix) && m.FieldMappingForPath(field).Type == ""
}
