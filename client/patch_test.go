package client

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestMergePatchRFC7386: the examples of RFC 7386's Appendix A, and that
// members keep their order.
func TestMergePatchRFC7386(t *testing.T) {
	cases := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		// Order kept, new members last, numbers as written.
		{`{"id":"x","z":1,"a":2.50}`, `{"b":3,"z":1e2}`, `{"id":"x","z":1e2,"a":2.50,"b":3}`},
	}
	for _, c := range cases {
		got, err := mergePatch(json.RawMessage(c.target), json.RawMessage(c.patch), 0)
		if err != nil {
			t.Errorf("%s + %s: %v", c.target, c.patch, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s + %s = %s, want %s", c.target, c.patch, got, c.want)
		}
	}
}

// TestMergePatchRefuses: what a patch may not be.
func TestMergePatchRefuses(t *testing.T) {
	deep := ""
	for range maxPatchDepth + 2 {
		deep += `{"a":`
	}
	deep += "1"
	for range maxPatchDepth + 2 {
		deep += "}"
	}
	for _, patch := range []string{`{"a":1,"a":2}`, `{"a":`, `{"a":1} {}`, deep, `{"a":{"b":1,"b":2}}`} {
		if got, err := mergePatch(json.RawMessage(`{"id":"x"}`), json.RawMessage(patch), 0); err == nil {
			t.Errorf("patch %.40s… gave %.40s…, want refused", patch, got)
		}
	}
}

// FuzzMergePatch: whatever the target and patch, a merge that succeeds
// is the JSON RFC 7386 defines (a reference merge over decoded values,
// member order aside).
func FuzzMergePatch(f *testing.F) {
	f.Add(`{"id":"x","a":{"b":1}}`, `{"a":{"b":null,"c":[1]},"d":"e"}`)
	f.Add(`{"a":"b"}`, `null`)
	f.Add(`{}`, `{"a":{"bb":{"ccc":null}}}`)
	f.Fuzz(func(t *testing.T, target, patch string) {
		var tv, pv any
		if json.Unmarshal([]byte(target), &tv) != nil || json.Unmarshal([]byte(patch), &pv) != nil {
			return
		}
		got, err := mergePatch(json.RawMessage(target), json.RawMessage(patch), 0)
		if err != nil {
			return // duplicate names, too deep: refused
		}
		var gv any
		if err := json.Unmarshal(got, &gv); err != nil {
			t.Fatalf("%s + %s = %s: not JSON: %v", target, patch, got, err)
		}
		if want := referenceMerge(tv, pv); !reflect.DeepEqual(gv, want) {
			t.Fatalf("%s + %s = %s, want %v", target, patch, got, want)
		}
	})
}

// referenceMerge is RFC 7386's pseudocode over decoded values.
func referenceMerge(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = referenceMerge(t[k], v)
		}
	}
	return t
}
