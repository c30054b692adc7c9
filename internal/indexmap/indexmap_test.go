package indexmap

import (
	"errors"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

func TestBuild(t *testing.T) {
	cases := []struct {
		name, raw string
		ok        bool
	}{
		{"empty", "", true},
		{"default object", `{}`, true},
		{"typed", `{"default_mapping":{"properties":{"name":{"fields":[{"type":"text","analyzer":"en"}]}}}}`, true},
		{"not json", `{`, false},
		{"wrong type", `{"default_mapping":7}`, false},
		{"unknown analyzer", `{"default_analyzer":"klingon"}`, false},
		{"bad scoring", `{"scoring_model":"magic"}`, false},
		// bleve's timestamp parsers, which its root package registers
		// (parsers.go): a process that links no index engine builds them.
		{"seconds since the epoch", `{"default_datetime_parser":"unix_sec"}`, true},
		{"milliseconds since the epoch", `{"default_mapping":{"properties":{"when":{"fields":[{"type":"datetime","date_format":"unix_milli"}]}}}}`, true},
		{"microseconds since the epoch", `{"default_datetime_parser":"unix_micro"}`, true},
		{"nanoseconds since the epoch", `{"default_datetime_parser":"unix_nano"}`, true},
		{"unknown date parser", `{"default_datetime_parser":"unix_fortnight"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Build([]byte(c.raw))
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				if m.ScoringModel != "bm25" {
					t.Fatalf("scoring model %q", m.ScoringModel)
				}
				return
			}
			if !errors.Is(err, api.ErrBadRequest) {
				t.Fatalf("got %v, want a bad request", err)
			}
		})
	}
}

// What bleve would take quietly (an unknown or wrongly cased key, a key
// twice, invalid UTF-8) is refused, and type errors are said in the API's
// words, not Go's.
func TestBuildStrict(t *testing.T) {
	cases := []struct {
		name, raw, want string
	}{
		{"unknown key", `{"default_analyser":"en"}`, "bad mapping: index mapping contains invalid keys: [default_analyser]"},
		{"wrong case", `{"Default_Analyzer":"en"}`, "invalid keys: [Default_Analyzer]"},
		{"unknown nested key", `{"default_mapping":{"enabld":false}}`, "document mapping contains invalid keys: [enabld]"},
		{"duplicate", `{"default_analyzer":"en","default_analyzer":"standard"}`, `bad mapping: duplicate field "default_analyzer"`},
		{"duplicate nested", `{"types":{"a":{"enabled":true,"enabled":false}}}`, `duplicate field "enabled" in types.a`},
		{"invalid UTF-8", "{\"default_mapping\":{\"properties\":{\"na\xffme\":{}}}}", "bad mapping: invalid UTF-8 in a field name in default_mapping.properties"},
		{"wrong type", `{"default_mapping":{"enabled":"yes"}}`, "bad mapping: expected true or false, got a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build([]byte(c.raw))
			if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a bad request containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "Go struct") {
				t.Fatalf("%v names Go types", err)
			}
		})
	}
}

// Every mapping Quarry stores (Canonical: bleve's own encoding) reads
// back under the strict rules.
func TestCanonicalReadsBack(t *testing.T) {
	for _, raw := range []string{"", `{"default_mapping":{"properties":{"name":{"fields":[{"type":"text","analyzer":"en"}]}}},"default_analyzer":"standard"}`} {
		c, err := Canonical([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Build(c); err != nil {
			t.Fatalf("canonical %s: %v", c, err)
		}
	}
}
