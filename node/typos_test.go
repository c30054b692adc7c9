package node

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/catalog"
)

// TestTypoTolerance: with query.typos "all", a word of 5 letters or more
// finds its one-typo forms (9 or more, two), stemmed as the field stems
// them, and a word found as typed ranks above its near-misses; a
// shorter word, a field marked exact, and a request with "typos": false
// take none. With "auto", the default, only the words the index does
// not hold as typed take typos, and a request with "typos": true takes
// them that way on an index without. Over NATS and HTTP.
func TestTypoTolerance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "name", Boost: 2}, {Field: "cuisine", Exact: true}}, Typos: api.TyposAll}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "typo", Shards: 2, Mapping: catalog.Mapping(), Query: qs}); err != nil {
		t.Fatal(err)
	}
	docs := `{"id":"exact","name":"Compression Noodles","cuisine":"thai"}
{"id":"inflected","name":"Compressed noodle soup","cuisine":"thai"}
{"id":"typo","name":"Compresion nodles","cuisine":"thai"}
{"id":"tofu","name":"Tofu bowl","cuisine":"korean"}
{"id":"other","name":"Green curry","cuisine":"thai"}
`
	mustBulk(t, c, "typo", bytes.NewBufferString(docs))
	for _, tc := range []struct {
		name  string
		req   api.SearchRequest
		want  string // ids in order; "a|b" where either order is right
		total uint64
	}{
		{"as typed ranks first", api.SearchRequest{Q: "compression"}, "exact|inflected,typo", 3},
		{"a typo finds the word, the typo first", api.SearchRequest{Q: "compresion"}, "typo,exact|inflected", 3},
		{"two typos from 9 letters", api.SearchRequest{Q: "commpresion"}, "exact|inflected|typo", 3},
		{"a short word takes none", api.SearchRequest{Q: "tofo"}, "", 0},
		{"an exact field takes none", api.SearchRequest{Q: "korrean"}, "", 0},
		{"the request turns it off", api.SearchRequest{Q: "compresion", Typos: new(false)}, "typo", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Search(ctx, "typo", &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if r.Total != tc.total || !orderIs(joinedIDs(r), tc.want) {
				t.Errorf("total %d, hits %s; want %d, %s", r.Total, joinedIDs(r), tc.total, tc.want)
			}
		})
	}

	// The default, "auto": a word the index holds as typed is taken as
	// meant (compresion is a document's), one it does not takes typos.
	if _, err := c.SetQuerySettings(ctx, "typo", api.QuerySettings{Fields: qs.Fields}); err != nil {
		t.Fatal(err)
	}
	url := "http://" + n.HTTPAddr + "/v1/indexes/typo/search"
	var r api.SearchResponse
	waitFor(t, func() bool { // the new settings
		code, _ := postJSON(t, url, `{"q":"compression"}`, &r)
		return code == 200 && r.Total == 2
	})
	for _, tc := range []struct {
		body, want string
		total      uint64
	}{
		{`{"q":"compression"}`, "exact|inflected", 2},
		{`{"q":"compresion"}`, "typo", 1},
		{`{"q":"commpresion"}`, "exact|inflected|typo", 3},
		{`{"q":"commpresion tofu"}`, "exact|inflected|typo|tofu", 4},
		{`{"q":"commpresion","typos":false}`, "", 0},
	} {
		if code, body := postJSON(t, url, tc.body, &r); code != 200 || r.Total != tc.total || !orderIs(joinedIDs(&r), tc.want) {
			t.Errorf("auto, %s: %d %s; want %d, %s", tc.body, code, body, tc.total, tc.want)
		}
	}
	// An index without typos: none, unless the request asks.
	if _, err := c.SetQuerySettings(ctx, "typo", api.QuerySettings{Fields: qs.Fields, Typos: api.TyposOff}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { // the settings without typos
		code, _ := postJSON(t, url, `{"q":"commpresion"}`, &r)
		return code == 200 && r.Total == 0
	})
	if code, body := postJSON(t, url, `{"q":"commpresion","typos":true}`, &r); code != 200 || r.Total != 3 {
		t.Fatalf(`"typos": true on an index without: %d %s`, code, body)
	}
	if code, body := postJSON(t, url, `{"q":"x","typos":"yes"}`, nil); code != 400 || !strings.Contains(body, "typos") {
		t.Errorf(`"typos": "yes": %d %s`, code, body)
	}
	// Settings that cannot be.
	for _, bad := range []struct {
		qs  api.QuerySettings
		msg string
	}{
		{api.QuerySettings{Typos: "always"}, `query.typos must be "auto", "all" or "off"`},
		{api.QuerySettings{Typos: "auto", Fuzziness: 1}, "do not go together"},
	} {
		if _, err := c.SetQuerySettings(ctx, "typo", bad.qs); api.CodeOf(err) != api.CodeBadRequest || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%+v: %v, want %q", bad.qs, err, bad.msg)
		}
	}
}

// joinedIDs are r's hits' ids, joined by commas (what orderIs takes).
func joinedIDs(r *api.SearchResponse) string { return strings.Join(r.IDs(len(r.Hits)), ",") }

// orderIs reports whether got (ids joined by commas) is want, where want
// lists ids by commas and alternatives of equal rank by "|" (any order
// among them).
func orderIs(got, want string) bool {
	if want == "" {
		return got == ""
	}
	g := strings.Split(got, ",")
	i := 0
	for _, group := range strings.Split(want, ",") {
		alts := strings.Split(group, "|")
		if i+len(alts) > len(g) {
			return false
		}
		seen := map[string]bool{}
		for _, id := range g[i : i+len(alts)] {
			seen[id] = true
		}
		for _, a := range alts {
			if !seen[a] {
				return false
			}
		}
		i += len(alts)
	}
	return i == len(g)
}

// TestSearchAsYouType: with query.prefix "last", the last word of q, when
// nothing follows it, also matches the words that start with it (from 3
// letters), a word typed whole ranking above the longer words it starts;
// a space after it, a shorter word, and a request with "prefix": false
// take none. With operator "and", every word must match but a stop word
// (the name field's analyser drops it), with or without typos. Over NATS
// and HTTP.
func TestSearchAsYouType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "name", Boost: 2}}, Prefix: "last", Operator: "and"}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "sayt", Shards: 2, Mapping: catalog.Mapping(), Query: qs}); err != nil {
		t.Fatal(err)
	}
	docs := `{"id":"tofu","name":"Tofu bowl"}
{"id":"tofurky","name":"Tofurky roast"}
{"id":"toffee","name":"Toffee pudding"}
{"id":"bowl","name":"Rice bowl"}
`
	mustBulk(t, c, "sayt", bytes.NewBufferString(docs))
	for _, tc := range []struct {
		name string
		req  api.SearchRequest
		want string
	}{
		{"a word being typed", api.SearchRequest{Q: "tof"}, "tofu|tofurky|toffee"},
		{"typed whole ranks first", api.SearchRequest{Q: "tofu"}, "tofu,tofurky"},
		{"every word before the last as typed (operator and)", api.SearchRequest{Q: "tofu bow"}, "tofu"},
		{"a stop word is not required (operator and)", api.SearchRequest{Q: "the tofu bow"}, "tofu"},
		{"nor last", api.SearchRequest{Q: "Tofu the"}, "tofu"},
		{"nor with typos", api.SearchRequest{Q: "the tofurkey", Typos: new(true)}, "tofurky"},
		{"stop words alone match nothing", api.SearchRequest{Q: "the an"}, ""},
		{"a space ends the word", api.SearchRequest{Q: "tof "}, ""},
		{"two letters are too few", api.SearchRequest{Q: "to"}, ""},
		{"the request turns it off", api.SearchRequest{Q: "tof", Prefix: new(false)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Search(ctx, "sayt", &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !orderIs(joinedIDs(r), tc.want) {
				t.Errorf("hits %s; want %s", joinedIDs(r), tc.want)
			}
		})
	}
	var r api.SearchResponse
	url := "http://" + n.HTTPAddr + "/v1/indexes/sayt/search"
	code, _, body := httpRequest(t, "GET", url+"?q=toff&prefix=true", "")
	if err := json.Unmarshal([]byte(body), &r); code != 200 || err != nil || joinedIDs(&r) != "toffee" {
		t.Fatalf("GET ?q=toff&prefix=true: %d %s", code, body)
	}
	if _, err := c.SetQuerySettings(ctx, "sayt", api.QuerySettings{Prefix: "first"}); api.CodeOf(err) != api.CodeBadRequest || !strings.Contains(err.Error(), `query.prefix must be "last" or "off"`) {
		t.Errorf(`prefix "first": %v`, err)
	}
}
