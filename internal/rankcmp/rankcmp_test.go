package rankcmp

import (
	"math"
	"testing"
)

// Two top-10 rankings compared by overlap and by the rank correlation of
// the items in both.
func TestCompare(t *testing.T) {
	cases := []struct {
		name          string
		live, shadow  []string
		overlap, corr float64
	}{
		{"same", []string{"a", "b", "c"}, []string{"a", "b", "c"}, 1, 1},
		{"reversed", []string{"a", "b", "c"}, []string{"c", "b", "a"}, 1, -1},
		{"shared in the same order", []string{"a", "b", "c", "d"}, []string{"x", "a", "y", "c"}, 0.5, 1},
		{"shared, swapped", []string{"a", "b", "c", "d"}, []string{"c", "x", "a"}, 0.5, -1},
		{"nothing shared", []string{"a", "b"}, []string{"x", "y"}, 0, 0},
		{"one shared", []string{"a", "b"}, []string{"b"}, 0.5, 1},
		{"both empty", nil, nil, 1, 0},
		{"only the shadow finds something", nil, []string{"a"}, 0, 0},
		{"only the live one finds something", []string{"a"}, nil, 0, 0},
		{"k cuts both", []string{"a", "b", "c"}, []string{"b", "a", "z"}, 1, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := 10
			if c.name == "k cuts both" {
				k = 2
			}
			if got := OverlapAt(k, c.live, c.shadow); math.Abs(got-c.overlap) > 1e-9 {
				t.Errorf("overlap@%d %v, want %v", k, got, c.overlap)
			}
			if got := Spearman(c.live[:min(k, len(c.live))], c.shadow[:min(k, len(c.shadow))]); math.Abs(got-c.corr) > 1e-9 {
				t.Errorf("correlation %v, want %v", got, c.corr)
			}
		})
	}
	// Any comparable items: candidate indexes.
	if got := OverlapAt(10, []uint32{3, 1, 2}, []uint32{1, 2, 3}); got != 1 {
		t.Errorf("overlap of candidate indexes %v", got)
	}
}
