package preempt

import (
	"errors"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/internal/wasmtest"
)

func TestLimits(t *testing.T) {
	cases := []struct {
		name string
		wasm []byte
		lim  Limits
		msg  string // "" passes
	}{
		{"within every limit", wasmtest.Nested(3, 100, 10), Limits{Functions: 3, BodyBytes: 304, Locals: 10, Nesting: 100, NestingWork: 3 * 100 * 101 / 2}, ""},
		{"nesting", wasmtest.Nested(1, 80000, 0), Limits{Nesting: 4096}, "blocks nested 4097 deep at body offset 8193, over the limit of 4096"},
		{"nesting work", wasmtest.Nested(20, 4000, 0), Limits{Nesting: 4096, NestingWork: 64 << 20}, "blocks' depths add up to over 67108864"},
		{"functions", wasmtest.Nested(11, 1, 0), Limits{Functions: 10}, "11 functions, over the limit of 10"},
		{"body bytes", wasmtest.Nested(1, 1000, 0), Limits{BodyBytes: 1000}, "function body 0 is 3002 bytes, over the limit of 1000"},
		{"locals", wasmtest.Nested(1, 1, 1<<20), Limits{Locals: 50000}, "1048576 locals, over the limit of 50000"},
		{"no limits", wasmtest.Nested(2, 5000, 70000), Limits{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Instrument(c.wasm, c.lim)
			switch {
			case c.msg == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.msg != "" && (!errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), c.msg)):
				t.Fatalf("got %v, want ErrLimit with %q", err, c.msg)
			}
		})
	}
}
