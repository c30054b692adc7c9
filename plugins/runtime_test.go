package plugins

import (
	"context"
	"errors"
	"testing"
)

// The instance cap's default is the one the CLI shows
// (DefaultMaxInstances; the library used to read 0 as no cap while the CLI
// defaulted to 64); negative is no cap.
func TestMaxInstancesDefault(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		max     int
		fits    int
		refused bool
	}{
		{"default", 0, DefaultMaxInstances, true},
		{"set", 5, 5, true},
		{"no cap", -1, 10 * DefaultMaxInstances, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := NewRuntime(ctx, Config{MaxInstances: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(ctx)
			if err := rt.reserve("a", tc.fits); err != nil {
				t.Fatalf("%d instances: %v", tc.fits, err)
			}
			if err := rt.reserve("b", 1); errors.Is(err, ErrLimit) != tc.refused {
				t.Fatalf("one more: %v, want refused %v", err, tc.refused)
			}
		})
	}
}
