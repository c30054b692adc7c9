package main

import (
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/plugins"
)

func TestCompileLimitsFlag(t *testing.T) {
	cases := []struct {
		in   string
		want plugins.CompileLimits
		err  string
	}{
		{"nesting=1000", func() plugins.CompileLimits { l := plugins.DefaultCompileLimits; l.Nesting = 1000; return l }(), ""},
		{"functions=5, locals=7,nesting-work=99999999999", func() plugins.CompileLimits {
			l := plugins.DefaultCompileLimits
			l.Functions, l.Locals, l.NestingWork = 5, 7, 99999999999
			return l
		}(), ""},
		{"nesting=0", plugins.CompileLimits{}, "positive whole number"},
		{"depth=5", plugins.CompileLimits{}, `unknown limit "depth"`},
		{"body-bytes=4294967296", plugins.CompileLimits{}, "at most 4294967295"},
		{"nesting", plugins.CompileLimits{}, "want name=N"},
	}
	for _, c := range cases {
		f := compileLimitsFlag(plugins.DefaultCompileLimits)
		err := f.Set(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v, want an error with %q", c.in, err, c.err)
		case c.err == "" && (err != nil || plugins.CompileLimits(f) != c.want):
			t.Errorf("%q: %+v %v, want %+v", c.in, f, err, c.want)
		}
	}
}
