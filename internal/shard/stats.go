package shard

import (
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/registry"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/internal/querystats"
	"github.com/quarrysearch/quarry/internal/wire"
)

// Exact distributed scoring (internal/querystats has the whole account):
// Quarry shards are bleve index type IndexType, scorch whose reader is a
// querystats.Reader, which records the terms a query reads (the
// statistics phase, Replica.Stats) and scores with an index's statistics
// (Replica.Search, through querystats.ScopedQuery), with token totals
// counted per segment by this package (tokens.go: tokenCache.LiveTokens).

// IndexType is the bleve index type of Quarry shards.
const IndexType = "quarry-scorch"

func init() {
	if err := registry.RegisterIndexType(IndexType, newStatsIndex); err != nil {
		panic(err)
	}
}

// GlobalStats is wire.GlobalStats: the scoring statistics of a whole index.
type GlobalStats = wire.GlobalStats

// statsIndex is scorch with a statistics-aware reader.
type statsIndex struct {
	index.Index
	tokens  *tokenCache
	columns *columnCache
}

func newStatsIndex(storeName string, config map[string]any, q *index.AnalysisQueue) (index.Index, error) {
	i, err := scorch.NewScorch(storeName, config, q)
	if err != nil {
		return nil, err
	}
	return &statsIndex{Index: i, tokens: newTokenCache(), columns: newColumnCache()}, nil
}

// Reader wraps scorch's reader.
func (s *statsIndex) Reader() (index.IndexReader, error) {
	r, err := s.Index.Reader()
	if err != nil {
		return nil, err
	}
	return querystats.NewReader(r, s.tokens).WithIDs(s.columns), nil
}

// CopyReader keeps bleve's online copy (snapshots) working.
func (s *statsIndex) CopyReader() index.CopyReader {
	return s.Index.(index.CopyIndex).CopyReader()
}

// FireIndexEvent forwards to scorch.
func (s *statsIndex) FireIndexEvent() {
	if e, ok := s.Index.(index.EventIndex); ok {
		e.FireIndexEvent()
	}
}

var _ index.CopyIndex = (*statsIndex)(nil)
