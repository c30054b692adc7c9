package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/wire"
)

// keywordDocs are packages with their licences as SPDX writes them
// (values this project did not make up: hyphens, dots, case, "+"), a
// licence list, a string over api.KeywordMaxBytes, and a mapped field.
var keywordDocs = []string{
	`{"id":"zlib","name":"zlib noodles","license":"Zlib","maintainer":"Jean-loup Gailly"}`,
	`{"id":"bash","name":"bash soup","license":"GPL-3.0-or-later","maintainer":"Chet Ramey"}`,
	`{"id":"git","name":"git noodles","license":"GPL-2.0-only","maintainer":"Junio C Hamano"}`,
	`{"id":"curl","name":"curl bowl","license":"curl","maintainer":"Daniel Stenberg"}`,
	`{"id":"openssl","name":"openssl soup","license":"Apache-2.0","maintainer":"OpenSSL Software Foundation"}`,
	`{"id":"perl","name":"perl noodles","license":["Artistic-1.0-Perl","GPL-1.0-or-later"],"maintainer":"Perl 5 Porters"}`,
	`{"id":"linux","name":"linux soup","license":"GPL-2.0-only WITH Linux-syscall-note","maintainer":"Linus Torvalds"}`,
	`{"id":"long","name":"long soup","license":"` + strings.Repeat("GPL ", 70) + `"}`,
}

// TestKeywordSubFields: a dynamic string field is searchable as words and
// also, whole, in its .keyword sub-field (of values of
// api.KeywordMaxBytes or less): a facet counts whole licences, a term
// query finds one exactly; a mapped field has none. The sub-fields
// change no score: _all and the fields score as in a bleve index that
// has none (bleve's own indexing of the same documents).
func TestKeywordSubFields(t *testing.T) {
	r, store := followReplica(t, WriteOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var seq uint64
	for _, d := range keywordDocs {
		var doc struct{ ID string }
		if err := json.Unmarshal([]byte(d), &doc); err != nil {
			t.Fatal(err)
		}
		seq = publishOne(t, store, doc.ID, d)
	}
	if err := r.WaitSeq(ctx, seq); err != nil {
		t.Fatal(err)
	}

	// A facet on the sub-field counts whole values; on the field, words.
	res, err := r.Search(ctx, &wire.ShardRequest{Query: json.RawMessage(`{"match_all":{}}`), K: 10, Facets: map[string]api.FacetRequest{
		"whole": {Field: "license" + api.KeywordSuffix, Size: 20}, "words": {Field: "license", Size: 3}, "mapped": {Field: "name" + api.KeywordSuffix}}})
	if err != nil {
		t.Fatal(err)
	}
	var whole []string
	for _, tc := range res.Facets["whole"].Terms {
		whole = append(whole, fmt.Sprintf("%s %d", tc.Term, tc.Count))
	}
	want := "Apache-2.0 1, Artistic-1.0-Perl 1, GPL-1.0-or-later 1, GPL-2.0-only 1, GPL-2.0-only WITH Linux-syscall-note 1, GPL-3.0-or-later 1, Zlib 1, curl 1"
	if got := strings.Join(whole, ", "); got != want || res.Facets["whole"].Missing != 1 {
		t.Errorf("facet on license.keyword: %s, %d missing; want %s, 1 missing (the long one)", got, res.Facets["whole"].Missing, want)
	}
	if terms := res.Facets["words"].Terms; len(terms) == 0 || terms[0].Term != "gpl" {
		t.Errorf("facet on license: %+v, want its words, gpl first", terms)
	}
	if f := res.Facets["mapped"]; f.Total != 0 || len(f.Terms) != 0 {
		t.Errorf("facet on name.keyword (name is mapped): %+v, want nothing", f)
	}

	// A term query on the sub-field finds a value exactly, not a word of
	// it; the field's words still match.
	for _, c := range []struct{ q, want string }{
		{`{"term":"GPL-2.0-only","field":"license.keyword"}`, "git"},
		{`{"term":"Artistic-1.0-Perl","field":"license.keyword"}`, "perl"},
		{`{"term":"gpl","field":"license.keyword"}`, ""},
		{`{"match":"syscall","field":"license"}`, "linux"},
	} {
		res, err := r.Search(ctx, &wire.ShardRequest{Query: json.RawMessage(c.q), K: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		if got := strings.Join(ids, ","); got != c.want {
			t.Errorf("%s: %q, want %q", c.q, got, c.want)
		}
	}

	// Scores as in a bleve index of the same documents, indexed by bleve.
	m, err := indexmap.Build(catalog.Mapping())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := bleve.NewUsing(t.TempDir()+"/plain", m, IndexType, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	b := plain.NewBatch()
	for _, d := range keywordDocs {
		var doc map[string]any
		if err := json.Unmarshal([]byte(d), &doc); err != nil {
			t.Fatal(err)
		}
		if err := b.Index(doc["id"].(string), doc); err != nil {
			t.Fatal(err)
		}
	}
	if err := plain.Batch(b); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`{"match":"gpl only noodles soup","field":"_all"}`,
		`{"match":"linux gpl","field":"_all"}`,
		`{"match":"gpl","field":"license"}`,
		`{"match":"noodles","field":"name"}`,
	} {
		got, err := r.Search(ctx, &wire.ShardRequest{Query: json.RawMessage(q), K: 10})
		if err != nil {
			t.Fatal(err)
		}
		bq, err := BuildRequest(&wire.ShardRequest{Query: json.RawMessage(q), K: 10})
		if err != nil {
			t.Fatal(err)
		}
		bq.SortBy([]string{"-_score", "_id"})
		want, err := plain.SearchInContext(ctx, bq)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Hits) != len(want.Hits) || len(got.Hits) == 0 {
			t.Fatalf("%s: %d hits, bleve %d", q, len(got.Hits), len(want.Hits))
		}
		for i, h := range got.Hits {
			if h.ID != want.Hits[i].ID || h.Score != want.Hits[i].Score {
				t.Errorf("%s: hit %d is %s %v, bleve's %s %v", q, i, h.ID, h.Score, want.Hits[i].ID, want.Hits[i].Score)
			}
		}
	}
}

// BenchmarkKeywordSubFields: applying batches of 100 catalogue items
// through bleve's own Batch.Index and through a replica's index (the
// keyword sub-fields of dynamic strings), side by side, with the
// catalogue's mapping (every field declared: no sub-field) and with the
// default, dynamic one (name, description, restaurant, cuisine, tags and
// city each get one).
//
//	go test -run XXX -bench KeywordSubFields -benchmem -count 5 ./internal/shard/
func BenchmarkKeywordSubFields(b *testing.B) {
	docs, _ := oddCatalog(b, 5000)
	for _, m := range []struct {
		name string
		raw  json.RawMessage
	}{{"declared", catalog.Mapping()}, {"dynamic", nil}} {
		for _, how := range []string{"bleve", "quarry"} {
			b.Run(m.name+"/"+how, func(b *testing.B) {
				r := loadReplicas(b, 1, m.raw, nil)[0]
				i := 0
				for b.Loop() {
					batch := r.idx.NewBatch()
					for range 100 {
						d := docs[i%len(docs)]
						i++
						var err error
						if how == "bleve" {
							err = batch.Index(d["id"].(string), d)
						} else {
							err = r.index(batch, d["id"].(string), d)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					if err := r.idx.Batch(batch); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestSuggestScanBound: a suggestion reads at most Scan terms of the
// field, in term order: of 30 words starting "ab", the first 10 (ab00 to
// ab09) are all it weighs, however often a later one is held.
func TestSuggestScanBound(t *testing.T) {
	var docs []map[string]any
	for i := range 30 {
		for range 1 + i { // ab29 is in the most documents
			docs = append(docs, map[string]any{"id": fmt.Sprintf("d%d-%d", i, len(docs)), "w": fmt.Sprintf("ab%02d", i)})
		}
	}
	r := loadReplicas(t, 1, nil, docs)[0]
	ctx := context.Background()
	for _, c := range []struct {
		scan int
		want string
	}{{10, "ab09 10, ab08 9"}, {1000, "ab29 30, ab28 29"}} {
		res, err := r.Search(ctx, &wire.ShardRequest{Query: json.RawMessage(`{"match_none":{}}`), K: 1,
			Suggest: &wire.Suggest{Field: "w", Text: "ab", Size: 2, Scan: c.scan}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tc := range res.Facets[wire.SuggestFacet].Terms {
			got = append(got, fmt.Sprintf("%s %d", tc.Term, tc.Count))
		}
		if g := strings.Join(got, ", "); g != c.want {
			t.Errorf("scan %d: %s, want %s", c.scan, g, c.want)
		}
	}
}

// TestSuggestLongWord: a word too long to have typos (api.TypoMaxLetters)
// is completed as typed, without them: one of 4,001 letters failed the
// search (its Levenshtein automaton over 10,000 states), one of 1,001
// took 88 ms of the shard.
func TestSuggestLongWord(t *testing.T) {
	r := loadReplicas(t, 1, nil, []map[string]any{{"id": "a", "w": "tomato"}, {"id": "b", "w": "t" + strings.Repeat("o", 4000)}})[0]
	w := "t" + strings.Repeat("o", 4000)
	res, err := r.Search(context.Background(), &wire.ShardRequest{Query: json.RawMessage(`{"match_none":{}}`), K: 1,
		Suggest: &wire.Suggest{Field: "w", Text: w, Size: 5, Scan: 100, Typos: true}})
	if err != nil {
		t.Fatal(err)
	}
	if terms := res.Facets[wire.SuggestFacet].Terms; len(terms) != 1 || terms[0].Term != w {
		t.Errorf("suggestions %+v, want the long word itself", terms)
	}
}
