package georank

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/sdk/abi"
)

func num(v float64) abi.Value { return abi.Value{Kind: abi.KindNumber, Num: v} }

func geo(lon, lat float64) abi.Value {
	return abi.Value{Kind: abi.KindList, List: []abi.Value{num(lon), num(lat)}}
}

func TestPastMidnight(t *testing.T) {
	cases := []struct {
		hour, from, to int
		open           bool
	}{
		{1, 18, 2, true}, {3, 18, 2, false}, {12, 9, 17, true}, {17, 9, 17, false},
	}
	for _, c := range cases {
		if got := Open(c.hour, c.from, c.to); got != c.open {
			t.Errorf("Open(%d, %d, %d) = %v", c.hour, c.from, c.to, got)
		}
	}
}

// Hooks run through the encoding a host uses: with an open boost of 0 an
// open place gains nothing on a closed one nearby.
func TestHooksOwnConfig(t *testing.T) {
	req := &abi.RankRequest{Context: []byte(`{"lat":51.5074,"lon":-0.1278,"hour":20}`),
		Fields: []string{"rating", "open_hour", "close_hour", "location"},
		Candidates: []abi.Candidate{
			{ID: "closed-near", Score: 1, Values: []abi.Value{num(4), num(8), num(15), geo(-0.128, 51.507)}},
			{ID: "open-far", Score: 1, Values: []abi.Value{num(4), num(18), num(2), geo(-0.5, 51.6)}},
		}}
	first := func(config string) string {
		t.Helper()
		h, err := Hooks([]byte(config))
		if err != nil {
			t.Fatal(err)
		}
		var resp abi.RankResponse
		if err := abi.DecodeRankResponse(h.HandleRank(abi.AppendRankRequest(nil, req), nil), len(req.Candidates), &resp); err != nil {
			t.Fatal(err)
		}
		return req.Candidates[resp.Ranked[0].Index].ID
	}
	if got := first(`{"open_boost":2}`); got != "open-far" {
		t.Errorf("open boost 2: %s first", got)
	}
	if got := first(`{"open_boost":0}`); got != "closed-near" {
		t.Errorf("open boost 0: %s first", got)
	}
}

// KM agrees with the haversine written out in full (two sines of each
// half difference, the origin's cosine computed each time) to within a
// millimetre, and gives a known distance: London to Paris, about 344 km.
func TestKM(t *testing.T) {
	full := func(lat1, lon1, lat2, lon2 float64) float64 {
		p1, p2 := lat1*math.Pi/180, lat2*math.Pi/180
		dp, dl := (lat2-lat1)*math.Pi/180, (lon2-lon1)*math.Pi/180
		a := math.Sin(dp/2)*math.Sin(dp/2) + math.Cos(p1)*math.Cos(p2)*math.Sin(dl/2)*math.Sin(dl/2)
		return 2 * 6371 * math.Asin(math.Sqrt(a))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		lat1, lon1 := rng.Float64()*180-90, rng.Float64()*360-180
		lat2, lon2 := rng.Float64()*180-90, rng.Float64()*360-180
		if got, want := KM(lat1, lon1, lat2, lon2), full(lat1, lon1, lat2, lon2); math.Abs(got-want) > 1e-6 {
			t.Fatalf("KM(%v, %v, %v, %v) = %v, written out %v", lat1, lon1, lat2, lon2, got, want)
		}
	}
	if d := KM(51.5074, -0.1278, 48.8566, 2.3522); d < 340 || d > 348 {
		t.Errorf("London to Paris: %v km", d)
	}
}

// The context's members: each boost only with its members, a malformed
// context or a member of the wrong type refused by name.
func TestRankContext(t *testing.T) {
	g, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	req := func(context string) *abi.RankRequest {
		return &abi.RankRequest{Context: []byte(context),
			Fields: []string{"rating", "open_hour", "close_hour", "location"},
			Candidates: []abi.Candidate{
				{ID: "a", Score: 1, Values: []abi.Value{num(3), num(8), num(22), geo(-0.1278, 51.5074)}},
			}}
	}
	cases := []struct {
		context string
		score   float64 // the candidate's, 0 for an error
		err     string
	}{
		{``, 1, ""},                              // rating 3: no boost
		{`{"hour":20}`, 2, ""},                   // open: +1
		{`{"hour":23}`, 1, ""},                   // closed
		{`{"lat":51.5074}`, 1, ""},               // no lon: no distance
		{`{"lat":51.5074,"lon":-0.1278}`, 2, ""}, // here: 5/(5+0)
		{`{"lat":51.5074,"lon":-0.1278,"hour":20}`, 3, ""},
		{`{"hour":20.5}`, 0, "hour 20.5 is not a whole number"},
		{`{"hour":1e10}`, 0, "not a whole number"},
		{`{"lat":"north"}`, 0, `"lat" is "north", not a number`},
		{`{"lat":51.5`, 0, "malformed context"},
		{`[51.5]`, 0, "not an object"},
	}
	h := &sdk.Hooks{Rank: g.Rank}
	for _, c := range cases {
		r := req(c.context)
		out := h.HandleRank(abi.AppendRankRequest(nil, r), nil)
		var resp abi.RankResponse
		err := abi.DecodeRankResponse(out, len(r.Candidates), &resp)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.context, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.context, err)
		case math.Abs(resp.Ranked[0].Score-c.score) > 1e-9:
			t.Errorf("%s: score %v, want %v", c.context, resp.Ranked[0].Score, c.score)
		}
	}
}
