package jsonenc

import (
	"encoding/json"
	"math"
	"testing"
)

// same checks that Append* wrote exactly what json.Marshal writes for v.
func same(t *testing.T, v any, got []byte, err error) {
	t.Helper()
	want, werr := json.Marshal(v)
	if (err != nil) != (werr != nil) {
		t.Fatalf("%#v: error %v, json.Marshal's %v", v, err, werr)
	}
	if err == nil && string(got) != string(want) {
		t.Fatalf("%#v:\n got %s\nwant %s", v, got, want)
	}
}

func TestLikeMarshal(t *testing.T) {
	for _, v := range []any{
		"", "plain", `quo"te back\slash`, "<b>&amp;</b>", "tab\tnl\ncr\rbs\bff\f\x00\x1f\x7f",
		"caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff\xfe utf-8 \xc3", "\xed\xa0\x80 surrogate",
		0.0, math.Copysign(0, -1), 1.0, -2.5, 1e-6, 9.99e-7, 1e21, 1e20, 123456789012345680000.0, 3.14159,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-9, -1e-10, math.NaN(), math.Inf(1), math.Inf(-1),
		true, false, nil,
		[]any{"a", 1.0, nil, []any{true}}, []float64{1, 2.5, -3e30}, []float64(nil), []any(nil),
		map[string]any{"b": 1.0, "a": "x", "<": []any{"y"}, "": map[string]any{"z": nil, "y": false}},
		map[string]any(nil), []string{"fallback", "<"}, map[string]int{"n": 1},
		[]float64{math.NaN()}, map[string]any{"bad": math.Inf(1)},
	} {
		got, err := AppendValue(nil, v)
		same(t, v, got, err)
	}
}

func TestObjectKeysReused(t *testing.T) {
	var keys []string
	for _, m := range []map[string]any{{"b": 1.0, "a": 2.0, "c": 3.0}, {"y": "1"}, {}} {
		got, err := AppendObject([]byte("prefix"), m, &keys)
		want, _ := json.Marshal(m)
		if err != nil || string(got) != "prefix"+string(want) {
			t.Fatalf("AppendObject(%v) = %s, %v; want prefix%s", m, got, err, want)
		}
	}
}

func TestDeepValueFallsBack(t *testing.T) {
	var v any = "leaf"
	for range 40 {
		v = []any{v, map[string]any{"k": v}}[0:1]
	}
	got, err := AppendValue(nil, v)
	same(t, v, got, err)
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\x00\u2028\xff", "ok \"quoted\" \\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		same(t, s, AppendString(nil, s), nil)
		same(t, s, AppendString(nil, []byte(s)), nil)
	})
}

func FuzzFloat(f *testing.F) {
	for _, x := range []float64{0, 1, -1e-7, 1e21, 5e-324, 0.1} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		got, err := AppendFloat(nil, x)
		same(t, x, got, err)
	})
}
