package strictjson

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

// refFields lists a decoded document's distinct field paths as
// CheckDocument counts them: every key at every depth joined with ".",
// arrays adding none. At the top, prefix is nil.
func refFields(v any, prefix *string, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if prefix != nil {
				p = *prefix + "." + k
			}
			into[p] = true
			refFields(x, &p, into)
		}
	case []any:
		for _, x := range v {
			refFields(x, prefix, into)
		}
	}
}

// depthOf is how deeply a decoded value nests objects and arrays (a
// scalar: 0).
func depthOf(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			d = max(d, depthOf(x))
		}
		return d + 1
	case []any:
		for _, x := range v {
			d = max(d, depthOf(x))
		}
		return d + 1
	}
	return 0
}

func hashes(paths ...string) []uint64 {
	out := make([]uint64, len(paths))
	for i, p := range paths {
		out[i] = FieldHash(p)
	}
	return out
}

// CheckDocument counts a document's distinct field paths as bleve names
// its fields, stops at the first one past its limit and at the first
// level past its depth, refuses numbers float64 cannot hold, and finds
// the id on the way.
func TestCheckDocument(t *testing.T) {
	cases := []struct {
		name      string
		doc       string
		depth     int
		fields    int
		want      []string // the paths, in order
		wantErr   string
		tooDeep   bool
		tooFields bool
	}{
		{"flat", `{"id":"a","name":"x","n":1}`, 20, 10, []string{"id", "name", "n"}, "", false, false},
		{"nested, arrays adding none", `{"id":"a","a":{"b":[{"c":1},{"c":2,"d":[3]}]}}`, 20, 10, []string{"id", "a", "a.b", "a.b.c", "a.b.d"}, "", false, false},
		{"a dotted key is the path it spells", `{"a.b":1,"a":{"b":2}}`, 20, 10, []string{"a.b", "a"}, "", false, false},
		{"an escaped key, unescaped", `{"\u0061":{"b":1},"a\u002eb":2}`, 20, 10, []string{"a", "a.b"}, "", false, false},
		{"at the field limit", `{"id":"a","b":1,"c":2}`, 20, 3, []string{"id", "b", "c"}, "", false, false},
		{"one over the field limit", `{"id":"a","b":1,"c":2,"d":3}`, 20, 3, nil, "more than 3 fields (distinct field paths) at byte 22", false, true},
		{"repeated paths count once", `{"a":[{"x":1},{"x":2},{"x":3}],"b":{"x":1}}`, 20, 4, []string{"a", "a.x", "b", "b.x"}, "", false, false},
		{"at the depth limit", `{"a":{"b":[1]}}`, 3, 10, []string{"a", "a.b"}, "", false, false},
		{"one level deeper", `{"a":{"b":[[1]]}}`, 3, 10, nil, "nesting deeper than 3 levels at byte 11", true, false},
		{"1e400", `{"id":"hn","v":1e400}`, 20, 10, nil, "v must be a number that fits in a 64-bit float, got 1e400", false, false},
		{"-1e400 in an array", `{"v":[1,-1E+400]}`, 20, 10, nil, "v[1] must be a number that fits in a 64-bit float, got -1E+400", false, false},
		{"310 digits", `{"v":` + strings.Repeat("9", 310) + `}`, 20, 10, nil, "must be a number that fits in a 64-bit float", false, false},
		{"small and long numbers fit", `{"v":1e-400,"w":1.7976931348623157e308,"x":` + strings.Repeat("9", 300) + `,"y":0.` + strings.Repeat("1", 400) + `}`, 20, 10, []string{"v", "w", "x", "y"}, "", false, false},
		{"not an object", `[{"a":1}]`, 20, 10, nil, "expected an object, got an array", false, false},
		{"a duplicate key", `{"a":1,"a":2}`, 20, 10, nil, `duplicate field "a" at byte 7`, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := CheckDocument([]byte(tc.doc), "id", tc.depth, tc.fields)
			if tc.wantErr != "" {
				e, ok := err.(*Error)
				if !ok || !strings.Contains(err.Error(), tc.wantErr) || e.TooDeep() != tc.tooDeep || e.TooManyFields() != tc.tooFields {
					t.Fatalf("err %v, want one saying %q (too deep %v, too many fields %v)", err, tc.wantErr, tc.tooDeep, tc.tooFields)
				}
				if tc.tooFields && e.Limit() != tc.fields || tc.tooDeep && e.Limit() != tc.depth {
					t.Errorf("limit %d", e.Limit())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Fields, hashes(tc.want...)) {
				t.Errorf("fields %x, want the hashes of %q", d.Fields, tc.want)
			}
			if strings.HasPrefix(tc.doc, `{"id":"a"`) && string(d.ID) != `"a"` {
				t.Errorf("id %s", d.ID)
			}
		})
	}
}

// A document far past the field limit costs what its first fields do:
// the scan stops at the first key past it.
func TestCheckDocumentStopsEarly(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"id":"w"`)
	for i := range 100_000 {
		fmt.Fprintf(&b, `,"f%05d":1`, i)
	}
	b.WriteString("}")
	doc := []byte(b.String())
	d, err := CheckDocument(doc, "id", 20, 1000)
	e, ok := err.(*Error)
	if !ok || !e.TooManyFields() || string(d.ID) != `"w"` || len(d.Fields) != 1000 {
		t.Fatalf("err %v, id %s, %d fields", err, d.ID, len(d.Fields))
	}
	if e.Offset > 20_000 {
		t.Errorf("stopped at byte %d of %d", e.Offset, len(doc))
	}
	// The duplicate-key check allocates a key of a large object, the
	// paths a few times: in proportion to the limit, not the document.
	allocs := testing.AllocsPerRun(5, func() { CheckDocument(doc, "id", 20, 1000) })
	if allocs > 2*1000 {
		t.Errorf("%g allocations to refuse it", allocs)
	}
}

// FuzzCheckDocument: a document CheckDocument accepts decodes with
// encoding/json, into exactly the paths it counted, within its limits,
// every number a float64; one it refuses for its limits is over them.
func FuzzCheckDocument(f *testing.F) {
	for _, seed := range []string{
		`{"id":"a","a":{"b":[{"c":1},{"c":2,"d":[3]}]}}`,
		`{"a.b":1,"a":{"b":2},"\u0061\u002eb":3}`,
		`{"id":"hn","v":1e400}`,
		`{"v":[[[[[[1]]]]]]}`,
		`{"a":{"a":{"a":{"a":{}}}},"b":[{},{"c":null}]}`,
		"{\"k\xff\":1}",
		`{"x":-0.0e-0,"y":1E308,"z":2e308}`,
	} {
		f.Add([]byte(seed), 4, 6)
	}
	f.Fuzz(func(t *testing.T, data []byte, depth, fields int) {
		depth, fields = 1+abs(depth)%8, 1+abs(fields)%16
		d, err := CheckDocument(data, "id", depth, fields)
		var v any
		jerr := json.Unmarshal(data, &v)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			// (A document with a key twice decodes to less than it holds.)
			e, ok := err.(*Error)
			if ok && jerr == nil && CheckAny(data) == nil && (e.TooManyFields() || e.TooDeep()) {
				paths := map[string]bool{}
				refFields(v, nil, paths)
				if e.TooManyFields() && len(paths) <= fields || e.TooDeep() && depthOf(v) <= depth {
					t.Fatalf("refused as over a limit (%v) with %d fields, %d deep", err, len(paths), depthOf(v))
				}
			}
			return
		}
		if jerr != nil {
			t.Fatalf("CheckDocument accepted what encoding/json refuses: %v", jerr)
		}
		paths := map[string]bool{}
		refFields(v, nil, paths)
		if len(paths) > fields || depthOf(v) > depth {
			t.Fatalf("accepted %d fields, %d deep, over %d, %d", len(paths), depthOf(v), fields, depth)
		}
		got := slices.Sorted(slices.Values(d.Fields))
		want := slices.Sorted(slices.Values(hashes(slices.Collect(maps.Keys(paths))...)))
		if !slices.Equal(got, want) {
			t.Fatalf("fields %x, want the hashes of %q", got, slices.Sorted(maps.Keys(paths)))
		}
		var check func(any)
		check = func(v any) {
			switch v := v.(type) {
			case float64:
				if math.IsInf(v, 0) || math.IsNaN(v) {
					t.Fatalf("accepted %v", v)
				}
			case map[string]any:
				for _, x := range v {
					check(x)
				}
			case []any:
				for _, x := range v {
					check(x)
				}
			}
		}
		check(v)
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}
