package api

import (
	"slices"
	"time"
)

// DateRange is one range of a date range facet: [From, To), either open,
// each an RFC 3339 time or a date (2026-12-05, midnight UTC). Name names
// its count (default: "From-To" as given, an open end empty).
type DateRange struct {
	Name string `json:"name,omitempty"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// CalendarIntervals are the buckets a date histogram takes
// (FacetRequest.CalendarInterval).
var CalendarIntervals = []string{"hour", "day", "week", "month", "year"}

// ParseFacetTime reads a date range's bound: an RFC 3339 time, or a date
// (midnight UTC).
func ParseFacetTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Parse(time.DateOnly, s)
}

// Bounds are r's From and To (the zero time for an open end); call it on
// a range a request's Validate accepted.
func (r DateRange) Bounds() (from, to time.Time) {
	if r.From != "" {
		from, _ = ParseFacetTime(r.From)
	}
	if r.To != "" {
		to, _ = ParseFacetTime(r.To)
	}
	return from, to
}

// IsRange reports whether f counts ranges (numbers or dates), not terms.
func (f *FacetRequest) IsRange() bool {
	return f.EffectiveRanges() != nil || len(f.DateRanges) > 0 || f.CalendarInterval != ""
}

// EffectiveDateRanges are a date range facet's ranges, each named, a date
// histogram's made from its calendar interval; nil for any other facet.
// Call it on a request Validate accepted.
func (f *FacetRequest) EffectiveDateRanges() []DateRange {
	if f.CalendarInterval != "" {
		start, err1 := ParseFacetTime(f.Start)
		end, err2 := ParseFacetTime(f.End)
		if err1 != nil || err2 != nil {
			return nil
		}
		var out []DateRange
		for from := calendarFloor(start.UTC(), f.CalendarInterval); from.Before(end) && len(out) < MaxFacetRanges; {
			to := calendarNext(from, f.CalendarInterval)
			name := from.Format(time.RFC3339)
			out = append(out, DateRange{Name: name, From: name, To: to.Format(time.RFC3339)})
			from = to
		}
		return out
	}
	if len(f.DateRanges) == 0 {
		return nil
	}
	out := make([]DateRange, len(f.DateRanges))
	for i, r := range f.DateRanges {
		if r.Name == "" {
			r.Name = r.From + "-" + r.To
		}
		out[i] = r
	}
	return out
}

// calendarFloor is the start of the calendar interval t is in (UTC).
func calendarFloor(t time.Time, interval string) time.Time {
	y, m, d := t.Date()
	switch interval {
	case "hour":
		return t.Truncate(time.Hour)
	case "day":
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case "week": // from Monday
		day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	case "month":
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	default: // year
		return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	}
}

// calendarNext is the start of the calendar interval after the one that
// starts at t.
func calendarNext(t time.Time, interval string) time.Time {
	switch interval {
	case "hour":
		return t.Add(time.Hour)
	case "day":
		return t.AddDate(0, 0, 1)
	case "week":
		return t.AddDate(0, 0, 7)
	case "month":
		return t.AddDate(0, 1, 0)
	default:
		return t.AddDate(1, 0, 0)
	}
}

// validateDates checks a date facet's ranges or histogram (FacetRequest
// validate).
func (f *FacetRequest) validateDates(name string) error {
	dates := len(f.DateRanges) > 0 || f.CalendarInterval != "" || f.Start != "" || f.End != ""
	if !dates {
		return nil
	}
	switch {
	case len(f.Ranges) > 0 || f.Interval != 0 || f.Min != nil || f.Max != nil:
		return BadRequest("facet %q: give number ranges (ranges, interval) or date ranges (date_ranges, calendar_interval), not both", name)
	case len(f.DateRanges) > 0 && f.CalendarInterval != "":
		return BadRequest("facet %q: give date_ranges or a calendar_interval, not both", name)
	case f.CalendarInterval == "" && (f.Start != "" || f.End != ""):
		return BadRequest("facet %q: start and end go with a calendar_interval", name)
	case len(f.DateRanges) > MaxFacetRanges:
		return BadRequest("facet %q: %d date ranges, over the limit of %d", name, len(f.DateRanges), MaxFacetRanges)
	}
	if f.CalendarInterval != "" {
		if !slices.Contains(CalendarIntervals, f.CalendarInterval) {
			return BadRequest("facet %q: calendar_interval %q: want one of hour, day, week, month, year", name, f.CalendarInterval)
		}
		start, err := ParseFacetTime(f.Start)
		if err != nil {
			return BadRequest("facet %q: start %q: want an RFC 3339 time or a date (2026-12-05)", name, f.Start)
		}
		end, err := ParseFacetTime(f.End)
		if err != nil {
			return BadRequest("facet %q: end %q: want an RFC 3339 time or a date (2026-12-05)", name, f.End)
		}
		if !start.Before(end) {
			return BadRequest("facet %q: a date histogram needs start before end", name)
		}
		// Counted without making them: a year of hours is 8,760.
		n := 0
		for from := calendarFloor(start.UTC(), f.CalendarInterval); from.Before(end); from = calendarNext(from, f.CalendarInterval) {
			if n++; n > MaxFacetRanges {
				return BadRequest("facet %q: more than %d buckets of a %s from %s to %s: a longer calendar_interval, or a shorter span", name, MaxFacetRanges, f.CalendarInterval, f.Start, f.End)
			}
		}
	}
	seen := map[string]bool{}
	for i, r := range f.EffectiveDateRanges() {
		if r.From == "" && r.To == "" {
			return BadRequest("facet %q: date range %d has neither from nor to", name, i)
		}
		var from, to time.Time
		var err error
		if r.From != "" {
			if from, err = ParseFacetTime(r.From); err != nil {
				return BadRequest("facet %q: date range %d: from %q: want an RFC 3339 time or a date (2026-12-05)", name, i, r.From)
			}
		}
		if r.To != "" {
			if to, err = ParseFacetTime(r.To); err != nil {
				return BadRequest("facet %q: date range %d: to %q: want an RFC 3339 time or a date (2026-12-05)", name, i, r.To)
			}
		}
		if r.From != "" && r.To != "" && !from.Before(to) {
			return BadRequest("facet %q: date range %d: from (%s) must be before to (%s)", name, i, r.From, r.To)
		}
		if seen[r.Name] {
			return BadRequest("facet %q: two date ranges named %q", name, r.Name)
		}
		seen[r.Name] = true
	}
	return nil
}
