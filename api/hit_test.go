package api

import (
	"encoding/json"
	"math"
	"testing"
)

// plainHit is Hit without its methods: what encoding/json writes from the
// struct's tags (FieldsJSON and SortKeys are "-"), which Hit.AppendJSON
// must match byte for byte.
type plainHit Hit

func TestHitJSONLikeItsTags(t *testing.T) {
	for _, h := range []Hit{
		{ID: "plain", Score: 1.5},
		{ID: "<&> \u2028 \xff", Score: 1e-9},
		{ID: "fields", Score: 0, Fields: map[string]any{"title": "<b>Noodles</b>", "price": 12.5, "tags": []any{"a", nil, true}, "geo": []float64{1, 2}, "obj": map[string]any{"z": 1.0, "a": "x"}}},
		{ID: "empty fields", Score: 2, Fields: map[string]any{}},
		{ID: "explained", Score: 3, Explanation: json.RawMessage(`{"value":3,"message":"sum of:"}`)},
		{ID: "sorted", Score: 4, Sort: []any{12.5, "text", nil, true, map[string]any{"lat": 1.0, "lon": 2.0}}},
	} {
		want, err := json.Marshal(plainHit(h))
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(h)
		if err != nil || string(got) != string(want) {
			t.Errorf("hit %q: got %s, %v\nwant %s", h.ID, got, err, want)
		}
		// The same hit with its fields as the shards send them.
		if len(h.Fields) > 0 {
			raw, _ := json.Marshal(h.Fields)
			h.Fields, h.FieldsJSON = nil, raw
			if got, err := json.Marshal(h); err != nil || string(got) != string(want) {
				t.Errorf("hit %q with FieldsJSON: got %s, %v\nwant %s", h.ID, got, err, want)
			}
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := json.Marshal(Hit{ID: "x", Score: bad}); err == nil {
			t.Errorf("score %v: encoded", bad)
		}
	}
}

func TestHitFieldValues(t *testing.T) {
	h := Hit{FieldsJSON: json.RawMessage(`{"a":1,"b":"x"}`)}
	if v := h.FieldValues(); v["a"] != 1.0 || v["b"] != "x" || h.Fields != nil {
		t.Fatalf("FieldValues = %v, Fields %v", v, h.Fields)
	}
	h.DecodeFields()
	if h.Fields["b"] != "x" || h.FieldsJSON != nil {
		t.Fatalf("DecodeFields: Fields %v, FieldsJSON %s", h.Fields, h.FieldsJSON)
	}
	if (&Hit{}).FieldValues() != nil || (&Hit{FieldsJSON: json.RawMessage(`{bad`)}).FieldValues() != nil {
		t.Fatal("no fields or bad JSON: want nil")
	}
}
