package meta

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
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

// TestBindCreatesNothing: a store opened with Bind (the Go client) on a
// deployment without Quarry's resources creates none and says to run
// `quarry init`; once they exist it opens every one of them.
func TestBindCreatesNothing(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	_, err := Open(ctx, ns.JS, Options{Bind: true})
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeUnavailable || !strings.Contains(err.Error(), "quarry init") {
		t.Fatalf("bind before init: %v, want unavailable naming quarry init", err)
	}
	n := 0
	for range ns.JS.StreamNames(ctx).Name() {
		n++
	}
	if n != 0 {
		t.Fatalf("bind made %d streams", n)
	}
	if _, err := Open(ctx, ns.JS, Options{}); err != nil {
		t.Fatal(err)
	}
	st, err := Open(ctx, ns.JS, Options{Bind: true})
	if err != nil {
		t.Fatalf("bind after init: %v", err)
	}
	if st.Indexes == nil || st.Docs == nil || st.Plugins == nil || st.Rejected == nil {
		t.Fatalf("bind left resources unopened: %+v", st)
	}
}
