package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

type facet struct {
	Field string `json:"field"`
	Size  int    `json:"size,omitempty"`
}

type inner struct {
	Digest string `json:"digest"`
}

type embedded struct {
	Extra bool `json:"extra,omitempty"`
}

type request struct {
	embedded
	Q       string           `json:"q,omitempty"`
	Query   json.RawMessage  `json:"query,omitempty"`
	Size    int              `json:"size,omitempty"`
	Count   uint             `json:"count,omitempty"`
	Boost   float64          `json:"boost,omitempty"`
	Sort    []string         `json:"sort,omitempty"`
	Facets  map[string]facet `json:"facets,omitempty"`
	Partial *bool            `json:"partial,omitempty"`
	Inner   *inner           `json:"inner,omitempty"`
	When    time.Time        `json:"when,omitzero"`
	Skipped string           `json:"-"`
	Self    []request        `json:"self,omitempty"`
	hidden  int
}

var reqSchema = For(reflect.TypeFor[request]())

func TestCheck(t *testing.T) {
	cases := []struct {
		name, in string
		want     string // "" for accepted; else a part of the message
		path     string
	}{
		{"empty object", `{}`, "", ""},
		{"every field", `{"q":"x","query":{"a":[1,{"b":null}]},"size":3,"count":0,"boost":1.5e3,"sort":["-a","b"],` +
			`"facets":{"f":{"field":"c","size":2}},"partial":false,"inner":{"digest":"d"},"when":"2024-05-01T10:00:00Z","extra":true,"self":[{"q":"y"}]}`, "", ""},
		{"null fields", `{"q":null,"size":null,"facets":null,"inner":null}`, "", ""},
		{"white space", " \t\n{ \"q\" : \"x\" }\r\n", "", ""},
		{"escapes", `{"q":"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`, "", ""},
		{"escaped key", `{"\u0071":"x"}`, "", ""},
		{"big int", `{"size":9223372036854775807,"count":18446744073709551615}`, "", ""},
		{"negative int", `{"size":-9223372036854775808}`, "", ""},

		{"empty", ``, "unexpected end of input", ""},
		{"null request", `null`, "expected an object, got null", ""},
		{"array", `[1]`, "expected an object, got an array", ""},
		{"truncated", `{"q":`, "unexpected end of input", ""},
		{"trailing", `{"q":"x"} {"q":"y"}`, "data after the JSON value at byte 10", ""},
		{"trailing comma", `{"q":"x",}`, "expected a field name", ""},
		{"single quotes", `{'q':"x"}`, "expected a field name", ""},
		{"bad literal", `{"partial":tru}`, "invalid literal", ""},
		{"bad number", `{"size":01}`, "expected ',' or '}'", ""},
		{"bad number 2", `{"boost":1.}`, "a digit must follow", ""},
		{"control char", "{\"q\":\"a\x01\"}", "control character", ""},
		{"bad escape", `{"q":"\x"}`, "invalid escape", ""},

		{"unknown", `{"qq":"x"}`, `unknown field "qq"; the fields are: extra, q, query,`, ""},
		{"wrong case", `{"Q":"x"}`, `unknown field "Q" (field names are case-sensitive: did you mean "q"?)`, ""},
		{"wrong case nested", `{"facets":{"f":{"Field":"c"}}}`, `unknown field "Field" in facets.f (field names are case-sensitive: did you mean "field"?)`, "facets.f"},
		{"unknown in array", `{"self":[{},{"x":1}]}`, `unknown field "x" in self[1]`, "self[1]"},
		{"skipped field", `{"Skipped":"x"}`, `unknown field "Skipped"`, ""},
		{"unexported", `{"hidden":1}`, `unknown field "hidden"`, ""},
		{"duplicate", `{"q":"a","size":1,"q":"b"}`, `duplicate field "q" at byte 18`, ""},
		{"duplicate escaped", `{"q":"a","\u0071":"b"}`, `duplicate field "q"`, ""},
		{"duplicate map key", `{"facets":{"f":{"field":"a"},"f":{"field":"b"}}}`, `duplicate field "f" in facets`, "facets"},
		{"duplicate in free", `{"query":{"match":"a","field":"x","field":"y"}}`, `duplicate field "field" in query`, "query"},
		{"duplicate deep in free", `{"query":{"a":[{"b":{"c":1,"c":2}}]}}`, `duplicate field "c" in query.a[0].b`, "query.a[0].b"},

		{"string for int", `{"size":"ten"}`, "size must be an integer, got a string", "size"},
		{"fraction for int", `{"size":1.5}`, "size must be an integer, got 1.5", "size"},
		{"exponent for int", `{"size":1e3}`, "size must be an integer, got 1e3", "size"},
		{"int overflow", `{"size":9223372036854775808}`, "size must be an integer that fits in 64 bits", "size"},
		{"negative uint", `{"count":-1}`, "count must be an integer >= 0, got -1", "count"},
		{"bool for string", `{"q":true}`, "q must be a string, got true", "q"},
		{"string for array", `{"sort":"a"}`, "sort must be an array, got a string", "sort"},
		{"number in array", `{"sort":["a",2]}`, "sort[1] must be a string, got a number", "sort[1]"},
		{"string for object", `{"inner":"x"}`, "inner must be an object, got a string", "inner"},
		{"string for bool", `{"partial":"yes"}`, "partial must be true or false, got a string", "partial"},
		{"array for map", `{"facets":[]}`, "facets must be an object, got an array", "facets"},
		{"bad time", `{"when":"yesterday"}`, `when must be a time in RFC 3339 form`, "when"},
		{"deep path", `{"self":[{"facets":{"a b":{"size":"x"}}}]}`, `self[0].facets."a b".size must be an integer, got a string`, `self[0].facets."a b".size`},

		{"invalid UTF-8", "{\"q\":\"col\xff\"}", "invalid UTF-8 in q at byte 9", "q"},
		{"invalid UTF-8 in array", "{\"sort\":[\"a\",\"\xfe\"]}", "invalid UTF-8 in sort[1] at byte 14", "sort[1]"},
		{"invalid UTF-8 key", "{\"q\xff\":1}", "invalid UTF-8 in a field name at byte 3", ""},
		{"invalid UTF-8 free key", "{\"query\":{\"fi\xffeld\":1}}", "invalid UTF-8 in a field name in query at byte 13", "query"},
		{"invalid UTF-8 free value", "{\"query\":{\"match\":{\"field\":\"n\xc3\"}}}", "invalid UTF-8 in query.match.field at byte 29", "query.match.field"},
		{"overlong encoding", "{\"q\":\"\xc0\xaf\"}", "invalid UTF-8 in q", "q"},
		{"surrogate half", "{\"q\":\"\xed\xa0\x80\"}", "invalid UTF-8 in q", "q"},
		{"lone high surrogate", `{"q":"a\ud800"}`, `invalid \u escape (a lone UTF-16 surrogate) in q at byte 7`, "q"},
		{"lone low surrogate", `{"q":"\udc00x"}`, `lone UTF-16 surrogate`, "q"},
		{"high then not low", `{"q":"\ud800\u0041"}`, `lone UTF-16 surrogate`, "q"},
		{"depth", `{"query":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`, "nesting deeper than 10000 levels", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check([]byte(c.in), reqSchema)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				var r request
				if err := json.Unmarshal([]byte(c.in), &r); err != nil {
					t.Fatalf("accepted, but encoding/json refuses it: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error containing %q", err, c.want)
			}
			if !strings.Contains(e.Error(), c.want) {
				t.Fatalf("got %q, want it to contain %q", e.Error(), c.want)
			}
			if e.Path != c.path {
				t.Fatalf("path %q, want %q", e.Path, c.path)
			}
			for _, leak := range []string{"Go struct", "of type", "main.", "strictjson.", "0x"} {
				if strings.Contains(e.Error(), leak) {
					t.Fatalf("%q shows an internal detail (%s)", e.Error(), leak)
				}
			}
		})
	}
}

func TestCheckObject(t *testing.T) {
	cases := []struct {
		in, value, folded, err string
	}{
		{`{"id":"a","x":{"id":"nested"}}`, `"a"`, "", ""},
		{` {"x":1, "id" : 7 } `, `7`, "", ""},
		{`{"ID":"a"}`, "", "ID", ""},
		{`{"Id":"a","id":"b"}`, `"b"`, "", ""},
		{`{"x":1}`, "", "", ""},
		{`[1]`, "", "", "expected an object, got an array"},
		{`{"id":"a","id":"b"}`, "", "", `duplicate field "id"`},
		{"{\"id\":\"col\xff\"}", "", "", "invalid UTF-8 in id at byte 10"},
		{"{\"id\":\"a\",\"name\\u00e9\":\"x\xfe\"}", "", "", `invalid UTF-8 in "nameé" at byte 25`},
		{`{"a":{"b":1,"b":2}}`, "", "", `duplicate field "b" in a`},
	}
	for _, c := range cases {
		v, folded, err := CheckObject([]byte(c.in), "id")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || string(v) != c.value || folded != c.folded {
			t.Errorf("%q: %q %q %v, want %q %q", c.in, v, folded, err, c.value, c.folded)
		}
	}
}

// Objects with many keys (past the small set) still find duplicates.
func TestManyKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		fmt.Fprintf(&b, `"k%d":1,`, i)
	}
	ok := b.String() + `"last":1}`
	if err := CheckAny([]byte(ok)); err != nil {
		t.Fatal(err)
	}
	for _, dup := range []string{`"k0":2}`, `"k15":2}`, `"k16":2}`, `"k39":2}`} {
		if err := CheckAny([]byte(b.String() + dup)); err == nil || !strings.Contains(err.Error(), "duplicate field") {
			t.Errorf("duplicate %s: %v", dup, err)
		}
	}
}

// A good request costs no allocation to check.
func TestCheckAllocs(t *testing.T) {
	in := []byte(`{"q":"spicy noodles","query":{"conjuncts":[{"match":"x","field":"name"}]},"size":20,"sort":["-a"],"facets":{"f":{"field":"c","size":10}}}`)
	if n := testing.AllocsPerRun(100, func() {
		if err := Check(in, reqSchema); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func TestDescribe(t *testing.T) {
	var r request
	err := json.Unmarshal([]byte(`{"boost":1e400}`), &r)
	if got := Describe(err); got != "boost must be a number, got 1e400" {
		t.Errorf("float overflow: %q", got)
	}
	var v struct {
		N int8 `json:"n"`
	}
	err = json.Unmarshal([]byte(`{"n":300}`), &v)
	if got := Describe(err); got != "n must be an integer, got 300" {
		t.Errorf("int8 overflow: %q", got)
	}
	if got := Describe(errors.New("secret 0xc000123 detail")); got != "invalid value" {
		t.Errorf("unknown error: %q", got)
	}
}

func BenchmarkCheck(b *testing.B) {
	in := []byte(`{"query":{"conjuncts":[{"match":"spicy noodles","field":"name"},{"term":"thai","field":"cuisine"}]},` +
		`"sort":["-price","_score"],"facets":{"cuisine":{"field":"cuisine","size":5},"diet":{"field":"diet"}},"size":20,"q":"x"}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := Check(in, reqSchema); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"q":"x","size":3,"facets":{"f":{"field":"c"}},"query":{"a":[1,"b",null]}}`))
	f.Add([]byte("{\"q\":\"\xff\",\"Q\":1,\"q\":2}"))
	f.Add([]byte(`{"q":"\ud800","size":1e999,"when":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data, reqSchema)
		var r request
		jerr := json.Unmarshal(data, &r)
		if err == nil && jerr != nil {
			t.Fatalf("Check accepted what encoding/json refuses: %v", jerr)
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
	})
}

// CheckLimited refuses nesting past its limit, says which limit, and its
// error's TooDeep tells it from other refusals; it finds a top-level field
// of a schema's object on the way.
func TestCheckLimited(t *testing.T) {
	schema := For(reflect.TypeFor[struct {
		Q     string          `json:"q"`
		Query json.RawMessage `json:"query"`
	}]())
	deep := []byte(`{"query":[[[1]]], "q" : "a\"b"}`) // 4 levels
	q, err := CheckLimited(deep, schema, 4, "q")
	if err != nil || string(q) != `"a\"b"` {
		t.Fatalf("4 levels under a limit of 4: %q, %v", q, err)
	}
	if q, err := CheckLimited([]byte(`{"query":{"q":"x"}}`), schema, 4, "q"); err != nil || q != nil {
		t.Fatalf("q only inside the query: %q, %v", q, err)
	}
	_, err = CheckLimited(deep, schema, 3, "q")
	var e *Error
	if !errors.As(err, &e) || !e.TooDeep() || err.Error() != "nesting deeper than 3 levels at byte 11" {
		t.Fatalf("4 levels under a limit of 3: %v", err)
	}
	if _, err := CheckLimited([]byte(`{"q":"a","q":"b"}`), schema, 3, "q"); !errors.As(err, &e) || e.TooDeep() {
		t.Fatalf("a duplicate key is not too deep: %v", err)
	}
}
