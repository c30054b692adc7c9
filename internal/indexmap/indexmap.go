package indexmap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/api/strictjson"
)

func init() {
	// bleve ignores keys it does not know in a mapping unless told
	// otherwise (and knows keys only as spelled: "Analyzer" is unknown):
	// refuse them, so a misspelt setting is not silently left out. Only
	// mappings bleve itself wrote (Canonical) are stored, so the stored
	// ones pass.
	mapping.MappingJSONStrict = true
}

// Build parses raw (a bleve index mapping in JSON) and validates it. Empty
// raw gives Quarry's default: bleve's dynamic default mapping scored with
// BM25. A mapping that names no scoring model also gets BM25. A mapping
// with invalid UTF-8, a key twice in an object, or a key bleve does not
// know is refused.
func Build(raw json.RawMessage) (*mapping.IndexMappingImpl, error) {
	m := mapping.NewIndexMapping()
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := strictjson.CheckAny(raw); err != nil {
			return nil, api.BadRequest("bad mapping: %v", err)
		}
		if err := json.Unmarshal(raw, m); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				// encoding/json's words name Go types: say it in the API's.
				return nil, api.BadRequest("bad mapping: %s", strictjson.Describe(err))
			}
			return nil, api.BadRequest("bad mapping: %v", err)
		}
	}
	if m.ScoringModel == "" {
		m.ScoringModel = index.BM25Scoring
	}
	if err := m.Validate(); err != nil {
		return nil, api.BadRequest("bad mapping: %v", err)
	}
	return m, nil
}

// Canonical returns the mapping as Quarry stores it: re-encoded after
// Build, so defaults are explicit, and with bleve's to_lower token filter
// replaced by Quarry's (FoldType: NFKC, then a lower case that keeps words
// valid), unless the mapping defines its own.
func Canonical(raw json.RawMessage) (json.RawMessage, error) {
	m, err := Build(raw)
	if err != nil {
		return nil, err
	}
	m.CustomAnalysis.TokenFilters = overrideLowerCase(m.CustomAnalysis.TokenFilters)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode mapping: %w", err)
	}
	if _, err := Build(b); err != nil {
		return nil, fmt.Errorf("mapping with Quarry's to_lower: %w", err)
	}
	return b, nil
}
