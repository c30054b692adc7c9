package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
)

func sampleResponse(n int) *ShardResponse {
	r := &ShardResponse{Total: 12345, MaxScore: 3.2, TookNS: 40000, Seq: 99, Generation: 3, Replica: "r1", QueueNS: 1200}
	for i := range n {
		r.Hits = append(r.Hits, api.Hit{
			ID:    fmt.Sprintf("r%04d-i%02d", i/20, i%20),
			Score: 3.2 / float64(i+1),
			Fields: map[string]any{
				"name":        "Spicy Dan Dan Noodles",
				"description": "Hand-pulled wheat noodles in a chilli oil and sesame sauce with minced pork",
				"price":       12.5,
			},
		})
	}
	return r
}

func TestRoundTrip(t *testing.T) {
	for _, threshold := range []int{0, 1, CompressThreshold, 1 << 30} {
		for _, n := range []int{0, 1, 100} {
			in := sampleResponse(n)
			msg := nats.NewMsg("x")
			if err := Encode(msg, in, threshold); err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(in)
			compressed := msg.Header.Get("Quarry-Encoding") == "zstd"
			if want := threshold > 0 && len(raw) > threshold; compressed != want {
				t.Errorf("threshold %d n %d: compressed=%v", threshold, n, compressed)
			}
			var out ShardResponse
			if err := Decode(msg, &out); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(in.Hits, out.Hits) && n > 0 {
				t.Fatalf("threshold %d n %d: hits differ", threshold, n)
			}
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	msg := nats.NewMsg("x")
	msg.Header.Set("Quarry-Encoding", "zstd")
	msg.Data = []byte("not zstd")
	var out ShardResponse
	if err := Decode(msg, &out); err == nil {
		t.Fatal("corrupt zstd accepted")
	}
}

func FuzzDecode(f *testing.F) {
	m := nats.NewMsg("x")
	_ = Encode(m, sampleResponse(3), 1)
	f.Add(m.Data, true)
	f.Add([]byte(`{"query":{"match":"x"},"k":10}`), false)
	f.Fuzz(func(t *testing.T, data []byte, z bool) {
		msg := nats.NewMsg("x")
		if z {
			msg.Header.Set("Quarry-Encoding", "zstd")
		}
		msg.Data = data
		var req ShardRequest
		_ = Decode(msg, &req)
		var resp ShardResponse
		_ = Decode(msg, &resp)
	})
}

// Statistics from a searcher that predates token totals leave the sums
// without any, so that no shard is sent partial totals; bleve's own field
// statistic is summed for such searchers.
func TestGlobalStatsAdd(t *testing.T) {
	newer := func(tokens, card int) *GlobalStats {
		return &GlobalStats{DocCount: 10, FieldTokens: map[string]int{"body": tokens}, FieldCardinality: map[string]int{"body": card},
			DocFreq: map[string]map[string]uint64{"body": {"a": 2}}}
	}
	older := &GlobalStats{DocCount: 5, FieldCardinality: map[string]int{"body": 3}, DocFreq: map[string]map[string]uint64{"body": {"a": 1, "b": 1}}}
	for _, tc := range []struct {
		name   string
		shards []*GlobalStats
		tokens map[string]int
		card   int
		df     uint64
	}{
		{"all newer", []*GlobalStats{newer(100, 7), newer(50, 4)}, map[string]int{"body": 150}, 11, 4},
		{"older last", []*GlobalStats{newer(100, 7), older}, nil, 10, 3},
		{"older first", []*GlobalStats{older, newer(100, 7)}, nil, 10, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sum GlobalStats
			for _, s := range tc.shards {
				b, _ := json.Marshal(s)
				var back GlobalStats
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatal(err)
				}
				sum.Add(&back)
			}
			if !reflect.DeepEqual(sum.FieldTokens, tc.tokens) || sum.FieldCardinality["body"] != tc.card || sum.DocFreq["body"]["a"] != tc.df {
				t.Fatalf("sum %+v", sum)
			}
		})
	}
}

// Terms that are not UTF-8 cross JSON unchanged (base64-encoded beside
// the others), and the statistics they came from are not changed.
func TestGlobalStatsJSONBytesTerms(t *testing.T) {
	st := GlobalStats{DocCount: 4, FieldTokens: map[string]int{"name": 9},
		DocFreq: map[string]map[string]uint64{"name": {"ok": 1, "i\xcc": 2, "\xff\xfe": 3}, "body": {"plain": 4}}}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(b) || strings.Contains(string(b), "\\ufffd") {
		t.Fatalf("not clean JSON: %s", b)
	}
	var back GlobalStats
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.DocFreq, st.DocFreq) || back.DocCount != 4 || back.FieldTokens["name"] != 9 {
		t.Fatalf("round trip: %+v, want %+v", back, st)
	}
	if len(st.DocFreq["name"]) != 3 {
		t.Fatalf("marshalling changed the statistics: %v", st.DocFreq)
	}
	// Through a pointer, inside a request, as on the wire.
	b, _ = json.Marshal(&ShardRequest{Stats: &st})
	var req ShardRequest
	if err := json.Unmarshal(b, &req); err != nil || !reflect.DeepEqual(req.Stats.DocFreq, st.DocFreq) {
		t.Fatalf("in a request: %v %+v", err, req.Stats)
	}
	if err := json.Unmarshal([]byte(`{"doc_freq_bytes":{"name":{"!!":1}}}`), new(GlobalStats)); err == nil {
		t.Fatal("a term that is not base64 was taken")
	}
}

// FuzzGlobalStatsJSON: statistics that decode encode to JSON that decodes
// to the same terms and counts.
func FuzzGlobalStatsJSON(f *testing.F) {
	f.Add([]byte(`{"doc_count":3,"doc_freq":{"f":{"a":1}},"doc_freq_bytes":{"f":{"/w==":2}}}`))
	f.Add([]byte(`{"doc_freq_bytes":{"g":{"aQ==":1}},"local":["g"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var st GlobalStats
		if json.Unmarshal(b, &st) != nil {
			return
		}
		again, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var back GlobalStats
		if err := json.Unmarshal(again, &back); err != nil {
			t.Fatalf("%s does not decode: %v", again, err)
		}
		if len(st.DocFreq) > 0 && !reflect.DeepEqual(st.DocFreq, back.DocFreq) {
			t.Fatalf("doc_freq %v, after a round trip %v", st.DocFreq, back.DocFreq)
		}
	})
}
