package indexmap

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// base is the mapping the cases below change.
const base = `{"default_mapping":{"properties":{
	"title":{"fields":[{"type":"text","analyzer":"en","index":true}]},
	"author":{"properties":{"name":{"fields":[{"type":"text","index":true}]}}}}},
	"analysis":{"analyzers":{"folded":{"type":"custom","tokenizer":"unicode","token_filters":["to_lower"]}}}}`

// What a new mapping adds, or the change that refuses it, named by its
// path in the mapping.
func TestAdditions(t *testing.T) {
	old := canonical(t, base)
	for _, c := range []struct {
		name, next string
		added      []string
		refused    string // in the error; "" for none
	}{
		{"the same", base, nil, ""},
		{"a property", strings.Replace(base, `"title":{`, `"tag":{"fields":[{"type":"text","analyzer":"keyword","index":true}]},"title":{`, 1), []string{"tag"}, ""},
		{"a nested property", strings.Replace(base, `"name":{`, `"born":{"fields":[{"type":"datetime","index":true}]},"name":{`, 1), []string{"author.born"}, ""},
		{"an object of properties, a field named apart", strings.Replace(base, `"title":{`, `"shop":{"properties":{"city":{"fields":[{"type":"text","name":"town","index":true}]}}},"title":{`, 1),
			[]string{"shop", "shop.city", "shop.town"}, ""},
		{"a type mapping", strings.Replace(base, `"analysis":`, `"types":{"book":{"properties":{"isbn":{"fields":[{"type":"text","analyzer":"keyword","index":true}]}}}},"analysis":`, 1), []string{"isbn"}, ""},
		{"an analyzer", strings.Replace(base, `"analyzers":{`, `"analyzers":{"plain":{"type":"custom","tokenizer":"whitespace"},`, 1), nil, ""},
		{"an analyzer changed", strings.Replace(base, `"tokenizer":"unicode"`, `"tokenizer":"whitespace"`, 1), nil, "analysis.analyzers.folded changed from"},
		{"a field's analyzer", strings.Replace(base, `"analyzer":"en"`, `"analyzer":"standard"`, 1), nil, "default_mapping.properties.title.fields changed from"},
		{"a second field on a property", strings.Replace(base, `"analyzer":"en","index":true}`, `"analyzer":"en","index":true},{"type":"text","name":"title_kw","analyzer":"keyword","index":true}`, 1), nil, "default_mapping.properties.title.fields changed"},
		{"a property taken out", strings.Replace(base, `"title":{"fields":[{"type":"text","analyzer":"en","index":true}]},`, ``, 1), nil, "default_mapping.properties.title removed"},
		{"a setting", strings.Replace(base, `{"default_mapping":{`, `{"default_analyzer":"en","default_mapping":{`, 1), nil, "default_analyzer changed from \"standard\" to \"en\""},
		{"dynamic turned off", strings.Replace(base, `{"default_mapping":{`, `{"default_mapping":{"dynamic":false,`, 1), nil, "default_mapping.dynamic changed from true to false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			added, err := Additions(old, canonical(t, c.next))
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "quarry index reindex") || api.CodeOf(err) != api.CodeBadRequest {
					t.Fatalf("%v (added %v), want a bad request saying %q and pointing to reindex", err, added, c.refused)
				}
				return
			}
			if err != nil || !slices.Equal(added, c.added) {
				t.Fatalf("added %v (%v), want %v", added, err, c.added)
			}
		})
	}
}

func canonical(tb testing.TB, raw string) json.RawMessage {
	tb.Helper()
	m, err := Canonical(json.RawMessage(raw))
	if err != nil {
		tb.Fatalf("%s: %v", raw, err)
	}
	return m
}

// FuzzAdditions: any mapping that builds compared with the base, and
// with itself: no panic, an error or a sorted list of paths, and nothing
// added and no error against itself.
func FuzzAdditions(f *testing.F) {
	f.Add(base)
	f.Add(`{}`)
	f.Add(`{"types":{"a":{"properties":{"b":{"properties":{"c":{}}}}}}}`)
	f.Add(`{"default_mapping":{"properties":{"title":{"fields":[{"type":"text","name":"x.y","index":true}]}}}}`)
	old := canonical(f, base)
	f.Fuzz(func(t *testing.T, raw string) {
		next, err := Canonical(json.RawMessage(raw))
		if err != nil {
			return
		}
		if added, err := Additions(old, next); err == nil && !slices.IsSorted(added) {
			t.Fatalf("added %v: not sorted", added)
		}
		if added, err := Additions(next, next); err != nil || len(added) != 0 {
			t.Fatalf("against itself: added %v, %v", added, err)
		}
	})
}
