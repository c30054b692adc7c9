package indexmap

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/api"
)

// Build parses raw (a bleve index mapping in JSON) and validates it. Empty
// raw gives Quarry's default: bleve's dynamic default mapping scored with
// BM25. A mapping that names no scoring model also gets BM25.
func Build(raw json.RawMessage) (*mapping.IndexMappingImpl, error) {
	m := mapping.NewIndexMapping()
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(m); err != nil {
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
// Build, so defaults are explicit.
func Canonical(raw json.RawMessage) (json.RawMessage, error) {
	m, err := Build(raw)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode mapping: %w", err)
	}
	return b, nil
}
