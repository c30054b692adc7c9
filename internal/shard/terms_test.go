package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/querystats"
	"github.com/quarrysearch/quarry/internal/wire"
)

// querystats.ListTerms finds, from the mapping alone, exactly the terms
// and fields the statistics phase records on the shards for every query
// whose terms do not depend on an index's dictionary, and says so for
// every query whose terms do.
func TestListTerms(t *testing.T) {
	g := corpus.New(corpus.Config{Seed: 5, BodyMax: 60})
	docs := g.Records(400)
	raw := corpus.Mapping("bm25")
	m, err := indexmap.Build(raw)
	if err != nil {
		t.Fatal(err)
	}
	reps := loadReplicas(t, 3, raw, docs)
	queries := exactQueries(t, g, docs)
	w := g.Words()
	text := w[3] + " " + w[44] + " Ünïcode ＦＵＬＬ"
	listed := map[string]bool{"match": true, "term": true, "phrase": true, "boolean": true,
		"several fields": true, "match all": true, "no such word": true, "query string terms": true, "filtered by a term": true}
	queries["several fields"] = fmt.Sprintf(`{"disjuncts":[{"match":%q,"field":"title","boost":3},{"match":%q,"field":"body"},{"match":%q,"field":"_all","boost":0.5},{"match_phrase":%q,"field":"title","boost":2}]}`, text, text, text, text)
	queries["match all"] = `{"match_all":{}}`
	queries["no such word"] = `{"match":"zzqxv nosuchword","field":"body"}`
	queries["query string terms"] = fmt.Sprintf(`{"query":"+title:%s %s -body:%s"}`, w[4], w[61], w[2])
	queries["filtered by a term"] = fmt.Sprintf(`{"must":{"conjuncts":[{"match":%q,"field":"body"}]},"filter":{"term":%q,"field":"title"}}`, w[8], w[9])
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			req := &wire.ShardRequest{Query: []byte(q), K: 10}
			qt, ok := querystats.ListTerms(context.Background(), req, m, nil)
			if ok != listed[name] {
				t.Fatalf("listed %v, want %v", ok, listed[name])
			}
			if !ok {
				return
			}
			sreq := *req
			sreq.Phase = wire.PhaseStats
			terms := map[string][]string{}
			fields := map[string]bool{}
			for _, r := range reps {
				st, err := r.Stats(context.Background(), &sreq)
				if err != nil {
					t.Fatal(err)
				}
				for f, ts := range st.DocFreq {
					for term := range ts {
						if !slices.Contains(terms[f], term) {
							terms[f] = append(terms[f], term)
						}
					}
				}
				for f := range st.FieldTokens {
					fields[f] = true
				}
			}
			for f := range terms {
				slices.Sort(terms[f])
			}
			got := map[string][]string{}
			for f, ts := range qt.Terms {
				got[f] = slices.Sorted(slices.Values(ts))
			}
			if !maps.EqualFunc(got, terms, slices.Equal) {
				t.Errorf("terms %v, the statistics phase read %v", got, terms)
			}
			if want := slices.Sorted(maps.Keys(fields)); !slices.Equal(qt.Fields, want) {
				t.Errorf("fields %v, the statistics phase counted %v", qt.Fields, want)
			}
		})
	}
}

// With the whole dictionaries of the text fields (as the broker keeps
// them: every shard's terms with live documents), ListTerms also lists
// what fuzzy, prefix and term-range queries expand to: the terms the
// statistics phase reads on the shards that live documents hold, and
// says which dictionaries it read. Queries over other dictionaries
// (wildcard and regexp automata, numeric, date and geo terms) stay
// unlisted.
func TestListTermsFromDictionaries(t *testing.T) {
	// Few foreign words: bleve's to_lower makes a term that is not UTF-8
	// of İstanbul, and a field with one is each shard's own (the broker
	// keeps none of its terms).
	g := corpus.New(corpus.Config{Seed: 5, BodyMax: 60, Foreign: 0.0001})
	docs := g.Records(400)
	raw := corpus.Mapping("bm25")
	m, err := indexmap.Build(raw)
	if err != nil {
		t.Fatal(err)
	}
	reps := loadReplicas(t, 3, raw, docs[:360])
	deleteDocs(t, reps, []string{docs[3]["id"].(string), docs[30]["id"].(string)})
	indexDocs(t, reps, docs[360:])
	ctx := context.Background()
	dicts := querystats.Dictionaries{}
	for _, field := range []string{"title", "body", "_all"} {
		all := map[string]bool{}
		for _, r := range reps {
			st, err := r.Dictionary(ctx, &wire.ShardRequest{Phase: wire.PhaseDictionary, DictionaryField: field})
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Local) > 0 {
				t.Fatalf("%s: a term that is not UTF-8", field)
			}
			for term := range st.DocFreq[field] {
				all[term] = true
			}
		}
		dicts[field] = slices.Sorted(maps.Keys(all))
	}
	queries := exactQueries(t, g, docs)
	w := g.Words()
	// A word whose first letter is typed wrong, before the real one: the
	// word is within one edit, but not of the prefix, so not read.
	var first string
	for _, x := range w[200:] {
		if len(x) >= 5 && x[0] > 'b' && x[0] <= 'z' {
			first = "a" + x[1:]
			break
		}
	}
	queries["fuzzy on _all"] = fmt.Sprintf(`{"match":"%sq %s %s","fuzziness":1,"prefix_length":1,"field":"_all"}`, w[12], w[14], first)
	queries["term range, no end"] = fmt.Sprintf(`{"min":%q,"field":"title"}`, w[90][:2])
	expands := map[string]bool{"fuzzy": true, "match fuzzy": true, "prefix": true, "term range": true, "fuzzy on _all": true, "term range, no end": true}
	unlisted := map[string]bool{"wildcard": true, "regexp": true, "query string": true, "filtered": true, "numeric scored": true, "date scored": true, "geo scored": true, "geo box": true}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			req := &wire.ShardRequest{Query: []byte(q), K: 10}
			qt, ok := querystats.ListTerms(ctx, req, m, dicts)
			if ok == unlisted[name] {
				t.Fatalf("listed %v, want %v", ok, !unlisted[name])
			}
			if !ok {
				return
			}
			if expands[name] != (len(qt.Dictionaries) > 0) {
				t.Errorf("dictionaries read %v", qt.Dictionaries)
			}
			sreq := *req
			sreq.Phase = wire.PhaseStats
			read := map[string]map[string]uint64{} // summed over the shards
			for _, r := range reps {
				st, err := r.Stats(ctx, &sreq)
				if err != nil {
					t.Fatal(err)
				}
				for f, ts := range st.DocFreq {
					if read[f] == nil {
						read[f] = map[string]uint64{}
					}
					for term, n := range ts {
						read[f][term] += n
					}
				}
			}
			// Every term the shards read that a live document holds is
			// listed; every term listed is one the shards read.
			for f, ts := range read {
				for term, n := range ts {
					if n > 0 && !slices.Contains(qt.Terms[f], term) {
						t.Errorf("%s: %q (%d documents) not listed", f, term, n)
					}
				}
			}
			for f, ts := range qt.Terms {
				for _, term := range ts {
					if _, ok := read[f][term]; !ok {
						t.Errorf("%s: %q listed, not read by the shards", f, term)
					}
				}
			}
		})
	}
}

// A search with statistics the broker put together refuses them as stale
// when they lack a term it reads (so the broker counts the query's own),
// names the term, and searches when they are whole; statistics from a
// statistics phase are not held to that.
func TestComposedStatsLackingATerm(t *testing.T) {
	g := corpus.New(corpus.Config{Seed: 6, BodyMax: 40})
	docs := g.Records(200)
	reps := loadReplicas(t, 2, corpus.Mapping("bm25"), docs)
	w := g.Words()
	q := fmt.Sprintf(`{"match":"%s %s","field":"body"}`, w[3], w[7])
	stats := func() *GlobalStats {
		gs := &GlobalStats{}
		for _, r := range reps {
			st, err := r.Stats(context.Background(), &wire.ShardRequest{Query: []byte(q), Phase: wire.PhaseStats})
			if err != nil {
				t.Fatal(err)
			}
			gs.Add(st)
		}
		return gs
	}
	lacking := stats()
	delete(lacking.DocFreq["body"], w[7])
	noTokens := stats()
	delete(noTokens.FieldTokens, "body")
	for _, tc := range []struct {
		name     string
		gs       *GlobalStats
		composed bool
		want     string // "" when the search runs
	}{
		{"whole, put together", stats(), true, ""},
		{"a term lacking, put together", lacking, true, fmt.Sprintf("lack term %q of field %q", w[7], "body")},
		{"a token total lacking, put together", noTokens, true, "lack a field's token total"},
		{"a term lacking, counted", lacking, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reps[0].Search(context.Background(), &wire.ShardRequest{Query: []byte(q), K: 5, Stats: tc.gs, StatsComposed: tc.composed, MaxStaleUpdates: 1000})
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (api.CodeOf(err) != wire.CodeStaleStats || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %s %q", err, wire.CodeStaleStats, tc.want)
			}
		})
	}
}

// A field's dictionary statistics (Replica.Dictionary) are those the
// statistics phase counts for a query reading every one of its terms
// (a prefix of ""), with the terms no live document holds left out:
// after deletes and updates, whose terms scorch's own dictionary still
// counts until a merge. Over max terms the shard refuses, naming the
// bound.
func TestDictionaryStatistics(t *testing.T) {
	g := corpus.New(corpus.Config{Seed: 8, BodyMax: 40})
	docs := g.Records(300)
	// Two replicas with deletes and updates, and one without, of fields
	// without term vectors, merged: a merge writes such a field's term of
	// one document in its dictionary entry, and zap's dictionary iterator
	// then counts the next term of many documents as one.
	ctx := context.Background()
	reps := loadReplicas(t, 2, corpus.Mapping("bm25"), docs)
	noVectors := strings.ReplaceAll(string(corpus.Mapping("bm25")), `"include_term_vectors": true`, `"include_term_vectors": false`)
	clean := loadReplicas(t, 1, json.RawMessage(noVectors), docs)
	if err := clean[0].ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range docs[:60] {
		ids = append(ids, d["id"].(string))
	}
	deleteDocs(t, reps, ids[:30])
	indexDocs(t, reps, g.Records(40)) // new documents and terms
	for _, d := range docs[30:60] {
		d["title"] = "quokka"
	}
	indexDocs(t, reps, docs[30:60]) // updates
	for i, r := range append(reps, clean...) {
		for _, field := range []string{"title", "body"} {
			got, err := r.Dictionary(ctx, &wire.ShardRequest{Phase: wire.PhaseDictionary, DictionaryField: field})
			if err != nil {
				t.Fatal(err)
			}
			want, err := r.Stats(ctx, &wire.ShardRequest{Phase: wire.PhaseStats, Query: []byte(fmt.Sprintf(`{"prefix":"","field":%q}`, field))})
			if err != nil {
				t.Fatal(err)
			}
			live := map[string]uint64{}
			for term, n := range want.DocFreq[field] {
				if n > 0 {
					live[term] = n
				}
			}
			if len(live) == len(want.DocFreq[field]) && r != clean[0] {
				t.Errorf("shard %d %s: every term of the dictionary has live documents: the deletes test nothing", i, field)
			}
			if !maps.Equal(got.DocFreq[field], live) || got.DocCount != want.DocCount || got.FieldTokens[field] != want.FieldTokens[field] || got.Seqs[r.cfg.Shard] != want.Seqs[r.cfg.Shard] {
				t.Errorf("shard %d %s: dictionary %d terms, %d documents, %d tokens; statistics phase %d live terms, %d, %d",
					i, field, len(got.DocFreq[field]), got.DocCount, got.FieldTokens[field], len(live), want.DocCount, want.FieldTokens[field])
			}
		}
	}
	_, err := reps[0].Dictionary(ctx, &wire.ShardRequest{Phase: wire.PhaseDictionary, DictionaryField: "body", MaxTerms: 10})
	if api.CodeOf(err) != api.CodeQueryTooComplex || !strings.Contains(err.Error(), "more than 10 terms") {
		t.Fatalf("over the bound: %v", err)
	}
	if _, err := reps[0].Dictionary(ctx, &wire.ShardRequest{Phase: wire.PhaseDictionary}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("no field: %v", err)
	}
}
