package meta

import (
	"context"
	"slices"
	"testing"

	"github.com/quarrysearch/quarry/internal/natstest"
)

// Open makes Resources streams (buckets and object stores included),
// each one whose replication Replication reports (and quarry init sets).
func TestOpenMakesResources(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	if _, err := Open(ctx, ns.JS, Options{}); err != nil {
		t.Fatal(err)
	}
	names := ns.JS.StreamNames(ctx)
	n := 0
	known := streamNames()
	for name := range names.Name() {
		n++
		if !slices.Contains(known, name) {
			t.Errorf("stream %s is not among streamNames: its replication is neither adopted nor set", name)
		}
	}
	if names.Err() != nil || n != Resources || len(known) != Resources {
		t.Fatalf("%d streams (%v), %d names known, want meta.Resources, %d", n, names.Err(), len(known), Resources)
	}
}
