package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
)

// TestRangeFacets: range and histogram facets count the documents whose
// number falls in each range, summed over 3 shards, in the order asked,
// empty ranges included; what is over their bounds is refused.
func TestRangeFacets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "rf", 3, nil); err != nil {
		t.Fatal(err)
	}
	var docs bytes.Buffer
	for i := range 60 { // prices 0, 0.5, …, 29.5
		fmt.Fprintf(&docs, `{"id":"p%d","price":%g}`+"\n", i, float64(i)/2)
	}
	mustBulk(t, c, "rf", &docs)
	matchAll := json.RawMessage(`{"match_all":{}}`)
	f := func(v float64) *float64 { return &v }
	r, err := c.Search(ctx, "rf", &api.SearchRequest{Query: matchAll, Size: api.NoHits, Facets: map[string]api.FacetRequest{
		"bands": {Field: "price", Ranges: []api.FacetRange{{To: f(10)}, {Name: "mid", From: f(10), To: f(20)}, {From: f(20)}, {From: f(100)}}},
		"hist":  {Field: "price", Interval: 7.5, Min: f(0), Max: f(30)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := func(name string) (out []string) {
		for _, rc := range r.Facets[name].Ranges {
			out = append(out, fmt.Sprintf("%s=%d", rc.Name, rc.Count))
		}
		return out
	}
	if g, want := strings.Join(got("bands"), " "), "-10=20 mid=20 20-=20 100-=0"; g != want {
		t.Errorf("bands: %s, want %s", g, want)
	}
	if g, want := strings.Join(got("hist"), " "), "0=15 7.5=15 15=15 22.5=15"; g != want {
		t.Errorf("histogram: %s, want %s", g, want)
	}
	for _, bad := range []struct {
		f   api.FacetRequest
		msg string
	}{
		{api.FacetRequest{Field: "price", Interval: 0.1, Min: f(0), Max: f(100)}, "1000 buckets"},
		{api.FacetRequest{Field: "price", Interval: 1}, "needs min < max"},
		{api.FacetRequest{Field: "price", Ranges: []api.FacetRange{{From: f(5), To: f(1)}}}, "must be below"},
		{api.FacetRequest{Field: "price", Ranges: []api.FacetRange{{}}}, "neither from nor to"},
		{api.FacetRequest{Field: "price", Ranges: []api.FacetRange{{Name: "a", To: f(1)}, {Name: "a", From: f(1)}}}, `two ranges named "a"`},
		{api.FacetRequest{Field: "price", Interval: 1, Min: f(0), Max: f(5), Ranges: []api.FacetRange{{To: f(1)}}}, "not both"},
	} {
		_, err := c.Search(ctx, "rf", &api.SearchRequest{Query: matchAll, Facets: map[string]api.FacetRequest{"x": bad.f}})
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%+v: %v, want bad request saying %q", bad.f, err, bad.msg)
		}
	}
}

// TestDateFacets: date range facets and date histograms (a calendar
// month, a week from Monday) count the documents whose date falls in each
// range, summed over 3 shards, in the order asked, named and bounded in
// UTC; what is over their bounds is refused. Over NATS and HTTP.
func TestDateFacets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "df", 3, nil); err != nil {
		t.Fatal(err)
	}
	// 60 documents a week apart from Saturday 2025-11-01 10:30 (+01:00: a
	// zone other than UTC), dates a dynamic mapping indexes as dates.
	first := time.Date(2025, 11, 1, 10, 30, 0, 0, time.FixedZone("CET", 3600))
	var docs bytes.Buffer
	var opened []time.Time
	for i := range 60 {
		at := first.AddDate(0, 0, 7*i)
		opened = append(opened, at)
		fmt.Fprintf(&docs, `{"id":"d%d","opened":%q}`+"\n", i, at.Format(time.RFC3339))
	}
	mustBulk(t, c, "df", &docs)
	count := func(from, to time.Time) int { // documents in [from, to), zero: open
		n := 0
		for _, at := range opened {
			if (from.IsZero() || !at.Before(from)) && (to.IsZero() || at.Before(to)) {
				n++
			}
		}
		return n
	}
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	facets := map[string]api.FacetRequest{
		"halves": {Field: "opened", DateRanges: []api.DateRange{{To: "2026-01-01"}, {Name: "h1", From: "2026-01-01", To: "2026-07-01T00:00:00Z"}, {From: "2026-07-01"}}},
		"months": {Field: "opened", CalendarInterval: "month", Start: "2025-11-15", End: "2026-03-01"},
		"weeks":  {Field: "opened", CalendarInterval: "week", Start: "2026-01-01", End: "2026-01-15"},
	}
	want := map[string]string{
		"halves": fmt.Sprintf("-2026-01-01=%d h1=%d 2026-07-01-=%d", count(time.Time{}, day(2026, 1, 1)), count(day(2026, 1, 1), day(2026, 7, 1)), count(day(2026, 7, 1), time.Time{})),
		"months": fmt.Sprintf("2025-11-01T00:00:00Z=%d 2025-12-01T00:00:00Z=%d 2026-01-01T00:00:00Z=%d 2026-02-01T00:00:00Z=%d",
			count(day(2025, 11, 1), day(2025, 12, 1)), count(day(2025, 12, 1), day(2026, 1, 1)), count(day(2026, 1, 1), day(2026, 2, 1)), count(day(2026, 2, 1), day(2026, 3, 1))),
		// 2026-01-01 is a Thursday: its week began on Monday 2025-12-29.
		"weeks": fmt.Sprintf("2025-12-29T00:00:00Z=%d 2026-01-05T00:00:00Z=%d 2026-01-12T00:00:00Z=%d",
			count(day(2025, 12, 29), day(2026, 1, 5)), count(day(2026, 1, 5), day(2026, 1, 12)), count(day(2026, 1, 12), day(2026, 1, 19))),
	}
	got := func(r *api.SearchResponse, name string) string {
		var out []string
		for _, rc := range r.Facets[name].Ranges {
			out = append(out, fmt.Sprintf("%s=%d", rc.Name, rc.Count))
		}
		return strings.Join(out, " ")
	}
	matchAll := json.RawMessage(`{"match_all":{}}`)
	r, err := c.Search(ctx, "df", &api.SearchRequest{Query: matchAll, Size: api.NoHits, Facets: facets})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if g := got(r, name); g != w {
			t.Errorf("NATS %s: %s, want %s", name, g, w)
		}
	}
	sum := 0
	for _, rc := range r.Facets["halves"].Ranges {
		sum += rc.Count
	}
	if sum != 60 {
		t.Errorf("the halves count %d documents, want all 60 (dates not indexed as dates?)", sum)
	}
	if m := r.Facets["months"].Ranges[0]; m.FromDate != "2025-11-01T00:00:00Z" || m.ToDate != "2025-12-01T00:00:00Z" || m.From != nil {
		t.Errorf("the first month's bounds: %+v", m)
	}
	if h := r.Facets["halves"].Ranges[0]; h.FromDate != "" || h.ToDate != "2026-01-01T00:00:00Z" {
		t.Errorf("the open range's bounds: %+v", h)
	}
	body, _ := json.Marshal(map[string]any{"size": 0, "facets": facets})
	var hr api.SearchResponse
	if code, out := postJSON(t, "http://"+n.HTTPAddr+"/v1/indexes/df/search", string(body), &hr); code != 200 {
		t.Fatalf("HTTP: %d %s", code, out)
	}
	for name, w := range want {
		if g := got(&hr, name); g != w {
			t.Errorf("HTTP %s: %s, want %s", name, g, w)
		}
	}
	for _, bad := range []struct {
		f   api.FacetRequest
		msg string
	}{
		{api.FacetRequest{Field: "opened", CalendarInterval: "fortnight", Start: "2026-01-01", End: "2026-02-01"}, "want one of hour, day, week, month, year"},
		{api.FacetRequest{Field: "opened", CalendarInterval: "day", Start: "2026-02-01", End: "2026-01-01"}, "needs start before end"},
		{api.FacetRequest{Field: "opened", CalendarInterval: "hour", Start: "2026-01-01", End: "2027-01-01"}, "more than 100 buckets of a hour"},
		{api.FacetRequest{Field: "opened", CalendarInterval: "day", Start: "yesterday", End: "2026-01-01"}, `start "yesterday": want an RFC 3339 time or a date`},
		{api.FacetRequest{Field: "opened", Start: "2026-01-01"}, "start and end go with a calendar_interval"},
		{api.FacetRequest{Field: "opened", DateRanges: []api.DateRange{{From: "2026-02-01", To: "2026-01-01"}}}, "must be before to"},
		{api.FacetRequest{Field: "opened", DateRanges: []api.DateRange{{}}}, "neither from nor to"},
		{api.FacetRequest{Field: "opened", DateRanges: []api.DateRange{{From: "2026-13-01"}}}, `from "2026-13-01"`},
		{api.FacetRequest{Field: "opened", DateRanges: []api.DateRange{{To: "2026-01-01"}}, Interval: 1, Min: new(0.0), Max: new(5.0)}, "not both"},
		{api.FacetRequest{Field: "opened", DateRanges: []api.DateRange{{To: "2026-01-01"}}, CalendarInterval: "day", Start: "2026-01-01", End: "2026-01-02"}, "date_ranges or a calendar_interval, not both"},
	} {
		_, err := c.Search(ctx, "df", &api.SearchRequest{Query: matchAll, Facets: map[string]api.FacetRequest{"x": bad.f}})
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%+v: %v, want bad request saying %q", bad.f, err, bad.msg)
		}
	}
}
