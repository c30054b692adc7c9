package cmdline

import (
	"errors"
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		min, max int
		pos      []string
		err      error
	}{
		{[]string{"a", "--n", "2", "b"}, 2, 2, []string{"a", "b"}, nil}, // flags after positional arguments
		{[]string{"--n", "2"}, 0, 0, nil, nil},
		{[]string{"a"}, 0, 0, nil, ErrUsage},                           // too many
		{[]string{}, 1, -1, nil, ErrUsage},                             // too few
		{[]string{"a", "b", "c"}, 1, -1, []string{"a", "b", "c"}, nil}, // no most
		{[]string{"--nope"}, 0, 0, nil, ErrUsage},                      // an unknown flag
		{[]string{"--n", "x"}, 0, 0, nil, ErrUsage},                    // a bad value
		{[]string{"-h"}, 0, 0, nil, flag.ErrHelp},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("n", 0, "")
		pos, err := Parse(fs, tc.args, tc.min, tc.max)
		if !errors.Is(err, tc.err) || (err == nil && !slices.Equal(pos, tc.pos)) {
			t.Errorf("Parse(%q, %d, %d) = %q, %v; want %q, %v", tc.args, tc.min, tc.max, pos, err, tc.pos, tc.err)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"512MiB": 512 << 20, "2GiB": 2 << 30, "1GB": 1e9, "10KB": 1e4, "4096": 4096, "7B": 7} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1GiB", "GiB", "lots", "1TiB", "1.5GiB", "99999999999GiB"} {
		if got, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
