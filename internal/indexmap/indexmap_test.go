package indexmap

import (
	"errors"
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
