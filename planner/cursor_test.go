package planner

import (
	"slices"
	"testing"
)

// FuzzDecodeCursor: whatever a search_after holds, DecodeCursor either
// refuses it or returns values that encode back to a cursor reading the
// same; a cursor of any values round-trips.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(EncodeCursor([]string{"\x01\x02price", "c042"}), 2, "a", "b")
	f.Add("AQA", 1, "", "\xff")
	f.Add("", 0, "x", "y")
	f.Fuzz(func(t *testing.T, cursor string, keys int, a, b string) {
		if keys < 0 || keys > 8 {
			return
		}
		if values, err := DecodeCursor(cursor, keys); err == nil {
			again, err := DecodeCursor(EncodeCursor(values), keys)
			if err != nil || !slices.Equal(again, values) {
				t.Fatalf("%q read as %q, which encodes to a cursor read as %q (%v)", cursor, values, again, err)
			}
		}
		values := []string{a, b}
		if got, err := DecodeCursor(EncodeCursor(values), 2); err != nil || !slices.Equal(got, values) {
			t.Fatalf("%q round-trips to %q (%v)", values, got, err)
		}
	})
}
