package testwait

import (
	"errors"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	n := 0
	if d := Until(t, time.Second, "the third look", func() bool { n++; return n == 3 }); d > time.Second {
		t.Fatalf("took %s", d)
	}
	if n != 3 {
		t.Fatalf("looked %d times, want 3", n)
	}
	if _, ok := poll(20*time.Millisecond, func() bool { return false }); ok {
		t.Fatal("a condition that never holds held")
	}
	var last error
	UntilErr(t, time.Second, "no error", func() error {
		if last == nil {
			last = errors.New("first")
			return last
		}
		return nil
	})
}
