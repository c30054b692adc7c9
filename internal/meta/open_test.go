package meta

import (
	"context"
	"testing"

	"github.com/quarrysearch/quarry/internal/natstest"
)

// Open makes Resources streams (buckets and object stores included).
func TestOpenMakesResources(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	if _, err := Open(ctx, ns.JS, Options{}); err != nil {
		t.Fatal(err)
	}
	names := ns.JS.StreamNames(ctx)
	n := 0
	for range names.Name() {
		n++
	}
	if names.Err() != nil || n != Resources {
		t.Fatalf("%d streams (%v), want meta.Resources, %d", n, names.Err(), Resources)
	}
}
