package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/nats-io/nats.go"
	"github.com/quarrysearch/quarry/api"
)

func TestBinaryRoundTrip(t *testing.T) {
	r := sampleResponse(20)
	r.Hits[0].SortKeys = []string{"a", "b"}
	r.Hits[1].Fields["tags"] = []any{"spicy", "vegan"}
	r.Hits[1].Fields["loc"] = []any{-73.9, 40.7}
	r.Hits[1].Fields["open"] = true
	r.Hits[1].Fields["nothing"] = nil
	r.Hits[1].Fields["obj"] = map[string]any{"lat": 1.5}
	r.Hits[2].Fields = nil
	r.Facets = map[string]api.FacetResult{"c": {Field: "cuisine", Total: 3, Other: 1, Terms: []api.TermCount{{Term: "thai", Count: 2}}}}
	withStats := *r
	withStats.Stats = &GlobalStats{DocCount: 9, FieldTokens: map[string]int{"name": 40}, DocFreq: map[string]map[string]uint64{"name": {"pad": 2}}, Seqs: map[int]uint64{0: 17}, Generation: 3}
	noFacets := withStats
	noFacets.Facets = nil
	for _, r := range []*ShardResponse{r, &withStats, &noFacets} {
		roundTrip(t, r)
	}
}

func roundTrip(t *testing.T, r *ShardResponse) {
	t.Helper()
	for _, threshold := range []int{0, 1} {
		out := sendAndRecycle(t, r, threshold)
		// JSON is the reference: both forms must carry the same data.
		want, _ := json.Marshal(r)
		got, _ := json.Marshal(out)
		if string(want) != string(got) {
			t.Fatalf("threshold %d: round trip differs\nwant %s\ngot  %s", threshold, want, got)
		}
		for i := range r.Hits { // not in the JSON
			if !slices.Equal(out.Hits[i].SortKeys, r.Hits[i].SortKeys) {
				t.Fatalf("threshold %d: hit %d sort keys %q, want %q", threshold, i, out.Hits[i].SortKeys, r.Hits[i].SortKeys)
			}
		}
	}
}

// olderResponse is a reply of layout version 1, from an older searcher:
// bleve's decoded sort values after the sort keys (skipped), and the
// fields as tagged values.
func olderResponse() []byte {
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	b := []byte{'Q', 'S', 1}
	b = binary.AppendUvarint(b, 7)                                 // total
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(1.5)) // max score
	b = binary.AppendVarint(b, 100)                                // took
	b = binary.AppendUvarint(b, 42)                                // seq
	b = binary.AppendUvarint(b, 3)                                 // generation
	b = str(b, "r1")                                               // replica
	b = binary.AppendVarint(b, 0)                                  // queue
	b = binary.AppendUvarint(b, 1)                                 // one hit
	b = str(b, "d1")
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(1.5))
	b = str(binary.AppendUvarint(b, 1), " key")    // one sort key
	b = str(binary.AppendUvarint(b, 1), "decoded") // one decoded value
	b = binary.AppendUvarint(b, 3)                 // three fields, tagged values
	b = append(str(b, "name"), 's')
	b = str(b, "Dan Dan")
	b = append(str(b, "tags"), 'a', 2, 'n')
	b = append(binary.LittleEndian.AppendUint64(b, math.Float64bits(2.5)), 'z')
	b = append(str(b, "obj"), 'j')
	b = str(b, `{"lat":1}`)
	b = binary.AppendUvarint(b, 0) // no facets
	return b
}

// A response from an older searcher, which sent bleve's decoded sort
// values after the sort keys and fields as tagged values, decodes; the
// decoded values are skipped.
func TestBinaryReadsOlderDecodedSort(t *testing.T) {
	b := olderResponse()
	var out ShardResponse
	if err := UnmarshalShardResponse(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Hits) != 1 || out.Hits[0].ID != "d1" || !slices.Equal(out.Hits[0].SortKeys, []string{" key"}) || out.Seq != 42 || out.Replica != "r1" {
		t.Fatalf("decoded %+v", out)
	}
	want := map[string]any{"name": "Dan Dan", "tags": []any{2.5, nil}, "obj": map[string]any{"lat": 1.0}}
	if !reflect.DeepEqual(out.Hits[0].Fields, want) || out.Hits[0].FieldsJSON != nil {
		t.Fatalf("version 1 fields decoded as %v (JSON %s), want %v", out.Hits[0].Fields, out.Hits[0].FieldsJSON, want)
	}
}

// Version 2 carries each hit's fields as the JSON object encoding/json
// writes for them, which the broker copies: the same bytes json.Marshal
// gives, and all hits' in one copy of the message, none in its buffer.
func TestBinaryFieldsAsJSON(t *testing.T) {
	r := sampleResponse(3)
	r.Hits[0].Fields["html"] = "<b>&</b> \u2028"
	r.Hits[1].Fields = map[string]any{}
	r.Hits[2].Fields = nil
	b, err := AppendShardResponse(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	var out ShardResponse
	if err := UnmarshalShardResponse(b, &out); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(r.Hits[0].Fields)
	if h := out.Hits[0]; string(h.FieldsJSON) != string(want) || h.Fields != nil {
		t.Fatalf("hit 0 fields %s (map %v), want %s", h.FieldsJSON, h.Fields, want)
	}
	for i := 1; i < 3; i++ {
		if h := out.Hits[i]; h.FieldsJSON != nil || h.Fields != nil {
			t.Fatalf("hit %d has fields %s %v, want none", i, h.FieldsJSON, h.Fields)
		}
	}
	clear(b)
	if string(out.Hits[0].FieldsJSON) != string(want) {
		t.Fatal("the decoded fields refer to the message's buffer")
	}
	// A decoded hit is sent on as it came.
	again, err := AppendShardResponse(nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	var twice ShardResponse
	if err := UnmarshalShardResponse(again, &twice); err != nil || string(twice.Hits[0].FieldsJSON) != string(want) {
		t.Fatalf("re-encoded: %v, fields %s", err, twice.Hits[0].FieldsJSON)
	}
}

func TestBinaryRefusesMalformed(t *testing.T) {
	good, err := AppendShardResponse(nil, sampleResponse(3))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"empty":         nil,
		"json":          []byte(`{"hits":[]}`),
		"other version": append([]byte{'Q', 'S', 9}, good[3:]...),
		"fields not an object": func() []byte {
			r := sampleResponse(1)
			r.Hits[0].Fields, r.Hits[0].FieldsJSON = nil, json.RawMessage(`["x"]`)
			b, _ := AppendShardResponse(nil, r)
			return b
		}(),
		"truncated":  good[:len(good)/2],
		"trailing":   append(append([]byte(nil), good...), 0),
		"huge count": {'Q', 'S', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for name, b := range cases {
		var out ShardResponse
		if err := UnmarshalShardResponse(b, &out); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	for i := range good { // every truncation fails cleanly
		var out ShardResponse
		if err := UnmarshalShardResponse(good[:i], &out); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", i)
		}
	}
}

func FuzzUnmarshalShardResponse(f *testing.F) {
	for _, n := range []int{0, 1, 5} {
		b, _ := AppendShardResponse(nil, sampleResponse(n))
		f.Add(b)
	}
	withStats := sampleResponse(2)
	withStats.Stats = &GlobalStats{DocCount: 3, DocFreq: map[string]map[string]uint64{"f": {"a": 1, "\xff": 2}}}
	b, _ := AppendShardResponse(nil, withStats)
	f.Add(b)
	f.Add(olderResponse())
	f.Fuzz(func(t *testing.T, b []byte) {
		var r ShardResponse
		if err := UnmarshalShardResponse(b, &r); err != nil {
			return
		}
		// Whatever decodes must encode and decode to the same thing.
		again, err := AppendShardResponse(nil, &r)
		if err != nil {
			return // e.g. a NaN in a 'j' value cannot be re-encoded as JSON
		}
		var r2 ShardResponse
		if err := UnmarshalShardResponse(again, &r2); err != nil {
			t.Fatalf("re-encoded response does not decode: %v", err)
		}
		if len(r.Hits) != len(r2.Hits) || r.Total != r2.Total {
			t.Fatal("re-encoded response differs")
		}
	})
}

// BenchmarkShardResponseCodec compares JSON and the binary form, encode plus
// decode, side by side: this is why shard responses are binary.
func BenchmarkShardResponseCodec(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		in := sampleResponse(n)
		b.Run(fmt.Sprintf("hits=%d/json", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				msg := nats.NewMsg("x")
				if err := Encode(msg, in, 0); err != nil {
					b.Fatal(err)
				}
				var out ShardResponse
				if err := Decode(msg, &out); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(msg.Data)), "bytes/msg")
			}
		})
		b.Run(fmt.Sprintf("hits=%d/binary", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				msg := nats.NewMsg("x")
				if err := EncodeShardResponse(msg, in, 0); err != nil {
					b.Fatal(err)
				}
				var out ShardResponse
				if err := DecodeShardResponse(msg, &out); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(msg.Data)), "bytes/msg")
				Recycle(msg) // as the searcher does once the reply is sent
			}
		})
		b.Run(fmt.Sprintf("hits=%d/binary+zstd", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				msg := nats.NewMsg("x")
				if err := EncodeShardResponse(msg, in, 1); err != nil {
					b.Fatal(err)
				}
				var out ShardResponse
				if err := DecodeShardResponse(msg, &out); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(msg.Data)), "bytes/msg")
				Recycle(msg) // as the searcher does once the reply is sent
			}
		})
	}
}

// A decoded response keeps nothing of the buffers EncodeShardResponse and
// DecodeShardResponse reuse: once they are recycled and written over by
// another response, the first decodes the same.
func TestRecycledBuffersAreNotShared(t *testing.T) {
	for _, threshold := range []int{0, 1} {
		first := sampleResponse(50)
		got := sendAndRecycle(t, first, threshold)
		other := sampleResponse(50)
		for i := range other.Hits {
			other.Hits[i].ID = strings.Repeat("z", len(other.Hits[i].ID))
			other.Hits[i].Fields["name"] = strings.Repeat("y", 21)
		}
		for range 4 { // write over whatever the pool handed back
			sendAndRecycle(t, other, threshold)
		}
		want, _ := json.Marshal(first)
		if now, _ := json.Marshal(got); string(now) != string(want) {
			t.Fatalf("threshold %d: the decoded response changed after its buffers were reused:\n%+v", threshold, got.Hits[0])
		}
	}
}

// sendAndRecycle encodes r, decodes it and recycles the message's
// buffer, as a searcher and a broker do, returning what was decoded.
func sendAndRecycle(t *testing.T, r *ShardResponse, threshold int) *ShardResponse {
	t.Helper()
	msg := nats.NewMsg("x")
	if err := EncodeShardResponse(msg, r, threshold); err != nil {
		t.Fatal(err)
	}
	var out ShardResponse
	if err := DecodeShardResponse(msg, &out); err != nil {
		t.Fatal(err)
	}
	Recycle(msg)
	if msg.Data != nil {
		t.Fatal("Recycle left msg.Data set")
	}
	return &out
}

// TestFacetsReadBleveJSON: the facets an older searcher sent (bleve's
// search.FacetResults as JSON) read as the same counts.
func TestFacetsReadBleveJSON(t *testing.T) {
	tf := &search.TermFacets{}
	tf.Add(&search.TermFacet{Term: "thai", Count: 2}, &search.TermFacet{Term: "lao", Count: 1})
	old, err := json.Marshal(search.FacetResults{"c": {Field: "cuisine", Total: 4, Missing: 1, Other: 1, Terms: tf}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]api.FacetResult
	if err := json.Unmarshal(old, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]api.FacetResult{"c": {Field: "cuisine", Total: 4, Missing: 1, Other: 1, Terms: []api.TermCount{{Term: "thai", Count: 2}, {Term: "lao", Count: 1}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
