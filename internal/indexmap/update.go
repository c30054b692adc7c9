package indexmap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/quarrysearch/quarry/api"
)

// Additions compares two canonical mappings (Canonical) of one index and
// returns the field paths next adds, sorted: a mapping may change in
// place only by adding, since the documents indexed already keep how
// they were indexed. Added may be document mappings' properties (each
// property's path, and the paths of its fields when a field is named
// other than its property), type mappings and analysis components
// (analyzers, tokenizers, filters…); any other difference (a setting, a
// field's options, a property removed) is an api.ErrBadRequest error
// naming the first one found, by its JSON path, and saying that such a
// change takes a reindex.
func Additions(old, next json.RawMessage) ([]string, error) {
	var o, n map[string]any
	if err := decode(old, &o); err != nil {
		return nil, fmt.Errorf("the index's mapping: %w", err)
	}
	if err := decode(next, &n); err != nil {
		return nil, api.BadRequest("bad mapping: %v", err)
	}
	c := comparison{added: map[string]bool{}}
	for _, k := range union(o, n) {
		switch k {
		case "default_mapping":
			c.document("default_mapping", "", o[k], n[k])
		case "types":
			c.each("types", o[k], n[k], func(path, name string, ov, nv any) {
				c.document(path, "", ov, nv)
			}, func(name string, nv any) { c.addDocument("", nv) })
		case "analysis":
			c.each("analysis", o[k], n[k], func(path, name string, ov, nv any) {
				c.each(path, ov, nv, func(path, name string, ov, nv any) { c.same(path, ov, nv) }, func(string, any) {})
			}, func(string, any) {})
		default:
			c.same(k, o[k], n[k])
		}
		if c.err != nil {
			return nil, c.err
		}
	}
	return slices.Sorted(maps.Keys(c.added)), nil
}

// decode decodes a mapping's JSON object, numbers kept as written.
func decode(raw json.RawMessage, v *map[string]any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// comparison walks two mappings, collecting the added field paths, and
// stops at the first change that is not an addition.
type comparison struct {
	added map[string]bool
	err   error
}

// same requires a setting to be unchanged.
func (c *comparison) same(path string, o, n any) {
	if c.err != nil || reflect.DeepEqual(o, n) {
		return
	}
	what := fmt.Sprintf("changed from %s to %s", brief(o), brief(n))
	switch {
	case n == nil:
		what = fmt.Sprintf("removed (it was %s)", brief(o))
	case o == nil:
		what = fmt.Sprintf("set to %s", brief(n))
	}
	c.err = api.BadRequest("mapping: %s %s: a mapping changes in place only by adding fields, types or analysis components; for any other change, reindex into a new index with the new mapping (quarry index reindex SRC DST --mapping FILE) and switch an alias to it", path, what)
}

// each compares two JSON objects whose members may be added (an absent
// object is an empty one): a member in both goes to both, one only in n
// to added, one only in o is a removal.
func (c *comparison) each(path string, o, n any, both func(path, name string, o, n any), added func(name string, n any)) {
	om, ok1 := asObject(o)
	nm, ok2 := asObject(n)
	if !ok1 || !ok2 {
		c.same(path, o, n)
		return
	}
	for _, k := range union(om, nm) {
		if c.err != nil {
			return
		}
		p := path + "." + k
		switch ov, nv := om[k], nm[k]; {
		case nv == nil:
			c.same(p, ov, nil)
		case ov == nil:
			added(k, nv)
		default:
			both(p, k, ov, nv)
		}
	}
}

// document compares a document mapping at path (its documents' path
// prefix field): properties may be added, nothing else may change.
func (c *comparison) document(path, field string, o, n any) {
	properties := func(path string, o, n any) {
		c.each(path, o, n, func(p, name string, o, n any) { c.document(p, join(field, name), o, n) },
			func(name string, n any) { c.addDocument(join(field, name), n) })
	}
	c.each(path, o, n, func(p, k string, o, n any) {
		if k == "properties" {
			properties(p, o, n)
		} else {
			c.same(p, o, n)
		}
	}, func(k string, n any) {
		if k == "properties" {
			properties(path+"."+k, nil, n)
		} else {
			c.same(path+"."+k, nil, n)
		}
	})
}

// addDocument records the field paths an added document mapping (at
// field, "" for a type's whole document) brings: its own, each field's
// name where it differs, and its properties', all the way down.
func (c *comparison) addDocument(field string, n any) {
	nm, _ := asObject(n)
	if field != "" {
		c.added[field] = true
	}
	if fields, ok := nm["fields"].([]any); ok && field != "" {
		parent := ""
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			parent = field[:i]
		}
		for _, f := range fields {
			fm, _ := asObject(f)
			if name, _ := fm["name"].(string); name != "" {
				c.added[join(parent, name)] = true
			}
		}
	}
	props, _ := asObject(nm["properties"])
	for name, p := range props {
		c.addDocument(join(field, name), p)
	}
}

// asObject is v as a JSON object (nil is an empty one).
func asObject(v any) (map[string]any, bool) {
	if v == nil {
		return map[string]any{}, true
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// union is the keys of two objects, sorted, once each.
func union(a, b map[string]any) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// join is a field path: prefix.name, or name at the top.
func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// brief is a JSON value for a message, cut at 80 bytes.
func brief(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
