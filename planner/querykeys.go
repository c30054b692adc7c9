package planner

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2/search/query"
)

// checkKeys refuses a key of a bleve query that bleve would ignore: bleve
// picks a query's kind from the keys it knows and drops the rest, so
// {"match": "pizza", "feild": "name"} would search every field. raw is
// the query as sent and q what bleve parsed from it; every object of raw
// that is a query (q, and the queries inside it: a boolean query's
// clauses, a conjunction's conjuncts…) may hold only the keys of its
// kind. The other values (a geo shape, a date) are bleve's to check.
func checkKeys(raw json.RawMessage, q query.Query) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || q == nil {
		return nil // not an object: bleve has said what it thinks
	}
	v := reflect.ValueOf(q)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	v = v.Elem()
	fields := queryFields(v.Type())
	for key, sub := range obj {
		f, ok := fields.byKey[key]
		if !ok {
			if fields.extra == key {
				continue
			}
			return fmt.Errorf("a %s query has no key %q (it has %s)", kindName(v.Type()), key, strings.Join(fields.keys, ", "))
		}
		if f < 0 {
			continue
		}
		if err := checkSub(sub, v.Field(f)); err != nil {
			return err
		}
	}
	return nil
}

// checkSub checks the queries in one field of a parsed query: a query, or
// a list of them.
func checkSub(raw json.RawMessage, fv reflect.Value) error {
	switch {
	case fv.Type() == queryType:
		if fv.IsNil() {
			return nil
		}
		return checkKeys(raw, fv.Interface().(query.Query))
	case fv.Kind() == reflect.Slice && fv.Type().Elem() == queryType:
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil || len(list) != fv.Len() {
			return nil
		}
		for i, sub := range list {
			if err := checkKeys(sub, fv.Index(i).Interface().(query.Query)); err != nil {
				return err
			}
		}
	}
	return nil
}

var queryType = reflect.TypeFor[query.Query]()

// keysOf is what a query kind's JSON may hold.
type keysOf struct {
	// byKey: each key's struct field, or -1 for a field that holds no
	// query.
	byKey map[string]int
	keys  []string // sorted, for the message
	// extra is a key bleve reads to pick the kind but keeps no field of
	// ("match_all", "match_none").
	extra string
}

var kinds sync.Map // reflect.Type → *keysOf

func queryFields(t reflect.Type) *keysOf {
	if k, ok := kinds.Load(t); ok {
		return k.(*keysOf)
	}
	k := &keysOf{byKey: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		k.byKey[name] = -1
		if f.Type == queryType || f.Type.Kind() == reflect.Slice && f.Type.Elem() == queryType {
			k.byKey[name] = i
		}
	}
	switch t {
	case reflect.TypeFor[query.MatchAllQuery]():
		k.extra = "match_all"
	case reflect.TypeFor[query.MatchNoneQuery]():
		k.extra = "match_none"
	}
	for key := range k.byKey {
		k.keys = append(k.keys, key)
	}
	if k.extra != "" {
		k.keys = append(k.keys, k.extra)
	}
	slices.Sort(k.keys)
	kinds.Store(t, k)
	return k
}

// kindName is a query kind as the API's documentation names it:
// MatchPhraseQuery → "match phrase".
func kindName(t reflect.Type) string {
	name := strings.TrimSuffix(t.Name(), "Query")
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}
