package requestid

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"abc-123", true},
		{"", false},
		{"has space", false},
		{"new\nline", false},
		{strings.Repeat("x", MaxBytes), true},
		{strings.Repeat("x", MaxBytes+1), false},
		{"ünïcode", false},
	} {
		if got := Valid(c.id); got != c.want {
			t.Errorf("Valid(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}
