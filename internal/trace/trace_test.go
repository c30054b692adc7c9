package trace

import (
	"strings"
	"testing"
)

func TestValidRequestID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"abc-123", true},
		{"", false},
		{"has space", false},
		{"new\nline", false},
		{strings.Repeat("x", MaxRequestIDBytes), true},
		{strings.Repeat("x", MaxRequestIDBytes+1), false},
		{"ünïcode", false},
	} {
		if got := ValidRequestID(c.id); got != c.want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}
