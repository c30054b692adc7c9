package sdk

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// contextNumberByJSON is ContextNumber by encoding/json: the context
// decoded into a map of raw members, the member under key decoded.
func contextNumberByJSON(context []byte, key string) (float64, bool, error) {
	if len(strings.Trim(string(context), " \t\r\n")) == 0 {
		return 0, false, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(context, &m); err != nil {
		return 0, false, err
	}
	var v any
	if raw, ok := m[key]; ok {
		if err := json.Unmarshal(raw, &v); err != nil {
			return 0, false, err
		}
	}
	switch v := v.(type) {
	case nil:
		return 0, false, nil
	case float64:
		return v, true, nil
	default:
		return 0, false, errors.New("not a number")
	}
}

func TestContextNumber(t *testing.T) {
	cases := []struct {
		context, key string
		want         float64
		found        bool
		err          string // in the error, "" for none
	}{
		{`{"lat":51.5,"lon":-0.12,"hour":20}`, "lat", 51.5, true, ""},
		{`{"lat":51.5,"lon":-0.12,"hour":20}`, "lon", -0.12, true, ""},
		{`{"lat":51.5,"lon":-0.12,"hour":20}`, "hour", 20, true, ""},
		{`{"lat":51.5}`, "hour", 0, false, ""},
		{``, "lat", 0, false, ""},
		{"  \n", "lat", 0, false, ""},
		{`null`, "lat", 0, false, ""},
		{`{}`, "lat", 0, false, ""},
		{`{"lat":null}`, "lat", 0, false, ""},
		{` { "lat" : 1e2 , "x" : [1, {"lat": 3}, "}"] } `, "lat", 100, true, ""}, // nested members are not the top level's
		{`{"lat":1,"lat":2}`, "lat", 2, true, ""},                                // the last of repeated keys
		{`{"l\u0061t":7}`, "lat", 7, true, ""},                                   // an escaped name
		{`{"\ud83d\ude00":7}`, "😀", 7, true, ""},                                 // a surrogate pair
		{`{"Lat":7}`, "lat", 0, false, ""},                                       // names match exactly
		{`{"lat":"51.5"}`, "lat", 0, false, `"lat" is "51.5", not a number`},
		{`{"lat":true}`, "lat", 0, false, "not a number"},
		{`{"lat":1e400}`, "lat", 0, false, "out of a number's range"},
		{`[1,2]`, "lat", 0, false, "not an object"},
		{`"lat"`, "lat", 0, false, "not an object"},
		{`{"lat":1`, "lat", 0, false, "ends after a member"},
		{`{"lat":01}`, "lat", 0, false, "unexpected '1' at byte 8"},
		{`{"lat":1,}`, "lat", 0, false, "in a member's name"},
		{`{"lat":1} x`, "lat", 0, false, "after the object"},
		{`{"x":"\q","lat":1}`, "lat", 0, false, "in a member's value"},
		{`{"x":[` + strings.Repeat("[", maxContextDepth) + strings.Repeat("]", maxContextDepth) + `],"lat":1}`, "lat", 0, false, "in a member's value"},
		{"{\"x\":\"a\x1fb\",\"lat\":1}", "lat", 0, false, "in a member's value"}, // a control character in a string
		{`nul`, "lat", 0, false, "not an object"},
		{`null x`, "lat", 0, false, "after null"},
	}
	for _, c := range cases {
		got, found, err := ContextNumber([]byte(c.context), c.key)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%.40s [%s]: %v", c.context, c.key, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrContext)):
			t.Errorf("%.40s [%s]: error %v, want one saying %q", c.context, c.key, err, c.err)
		case got != c.want || found != c.found:
			t.Errorf("%.40s [%s] = %v, %v; want %v, %v", c.context, c.key, got, found, c.want, c.found)
		}
		// encoding/json agrees (its depth limit is its own: left out).
		if len(c.context) < 1000 {
			want, wantFound, wantErr := contextNumberByJSON([]byte(c.context), c.key)
			if got != want || found != wantFound || (err == nil) != (wantErr == nil) {
				t.Errorf("%.40s [%s] = %v, %v, %v; encoding/json: %v, %v, %v", c.context, c.key, got, found, err, want, wantFound, wantErr)
			}
		}
	}
}

// TestContextNumberAllocates: a context read with no allocation, an
// escaped name included.
func TestContextNumberAllocates(t *testing.T) {
	for _, context := range []string{`{"lat":51.5,"lon":-0.12,"hour":20}`, `{"l\u0061t":1}`} {
		b := []byte(context)
		if n := testing.AllocsPerRun(100, func() { ContextNumber(b, "lat") }); n != 0 {
			t.Errorf("%s: %v allocations", context, n)
		}
	}
}

// FuzzContextNumber: ContextNumber answers what encoding/json answers
// (contextNumberByJSON) for any bytes and name: the number, whether it is
// there, and whether it is an error.
//
//	go test -run XXX -fuzz FuzzContextNumber ./sdk/
func FuzzContextNumber(f *testing.F) {
	for _, s := range []string{`{"lat":51.5,"lon":-0.12,"hour":20}`, `{"a":[1,{"b":null}],"lat":-0e-1}`, `{"l\u0061t":1,"lat":"x"}`, `{"\ud800":1}`, `{"\ud83d\ude00":2}`, "{\"\xff\":1}", `null`, `[]`, `{"lat":1e309}`, ` {"lat" : true } `} {
		f.Add([]byte(s), "lat")
	}
	f.Add([]byte(`{"\ud800":1}`), "\uFFFD")
	f.Add([]byte("{\"\xff\":1}"), "\uFFFD")
	f.Fuzz(func(t *testing.T, context []byte, key string) {
		got, found, err := ContextNumber(context, key)
		want, wantFound, wantErr := contextNumberByJSON(context, key)
		if got != want || found != wantFound || (err == nil) != (wantErr == nil) {
			t.Fatalf("%q [%q] = %v, %v, %v; encoding/json: %v, %v, %v", context, key, got, found, err, want, wantFound, wantErr)
		}
	})
}

// BenchmarkContextNumber reads georank's three members from its context,
// by ContextNumber and by json.Unmarshal into a struct (natively; in
// WebAssembly the second costs about 14 µs).
func BenchmarkContextNumber(b *testing.B) {
	context := []byte(`{"lat":51.5,"lon":-0.12,"hour":20}`)
	b.Run("ContextNumber", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, k := range []string{"lat", "lon", "hour"} {
				if _, _, err := ContextNumber(context, k); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var w struct {
				Lat, Lon *float64
				Hour     *int
			}
			if err := json.Unmarshal(context, &w); err != nil {
				b.Fatal(err)
			}
		}
	})
}
