package jsonenc

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// checkMembers holds Members to json.Unmarshal: for an object Unmarshal
// reads, Members finds each member as Unmarshal decodes it.
func checkMembers(t *testing.T, obj []byte, names []string) {
	t.Helper()
	var want map[string]any
	if json.Unmarshal(obj, &want) != nil || want == nil {
		values := make([]any, len(names))
		_ = Members(obj, names, values) // no panic; it may be lenient
		return
	}
	values := make([]any, len(names))
	if err := Members(obj, names, values); err != nil {
		t.Fatalf("Members(%s): %v", obj, err)
	}
	for i, n := range names {
		if !reflect.DeepEqual(values[i], want[n]) {
			t.Fatalf("Members(%s) %q = %#v, json.Unmarshal gives %#v", obj, n, values[i], want[n])
		}
	}
}

func TestMembers(t *testing.T) {
	for _, obj := range []string{
		`{}`, ` { } `, `{"price":12.5,"title":"Noodles","year":1999}`,
		`{"body":"a \"quoted\" \\ text, with } and ] and , inside","price":-1.5e-7}`,
		`{"nested":{"a":[1,{"b":"}"}],"c":{}},"price":3,"tags":["x","y"],"ok":true,"no":false,"nil":null}`,
		`{"\u0070rice":7,"caf\u00e9":"\u003cb\u003e","dup":1,"dup":2}`,
		"{\"bad\xff\":1,\"price\":\"a\xffb\"}",
		`{"big":1e400,"price":0}`, `{"price":01}`, `{"price":1,}`, `{"price"}`, `{"price":"unterminated`, `["price",1]`, `{"price":"\`,
	} {
		checkMembers(t, []byte(obj), []string{"price", "title", "tags", "nested", "ok", "no", "nil", "café", "dup", "bad\ufffd", "missing"})
	}
	// Absent members leave values as they were.
	values := []any{"kept"}
	if err := Members([]byte(`{"a":1}`), []string{"b"}, values); err != nil || values[0] != "kept" {
		t.Fatalf("absent: %v %v", values, err)
	}
}

func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":"x"}`, `{"a":[{"b":"}"}],"c":true}`, `{"\u0061":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		var m map[string]any
		names := []string{"a", "b", "c"}
		if json.Unmarshal(obj, &m) == nil {
			for k := range m {
				names = append(names, k)
			}
			slices.Sort(names)
		}
		checkMembers(t, obj, names)
	})
}
