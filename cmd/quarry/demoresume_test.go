package main

import (
	"context"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/demo"
	"github.com/quarrysearch/quarry/node"
)

// A `quarry serve --demo` stopped while loading (Ctrl-C in the first
// seconds) leaves the demo index made but not loaded: the next run must
// finish it, not take it as done. demoLoaded says it is done only once
// the pipeline is registered and the catalogue's last item stored (or
// stored and deleted since).
func TestDemoLoadedOnlyWhenFinished(t *testing.T) {
	t.Parallel()
	_, c := clusterWith(t, false, func(*node.Config) {})
	ctx := context.Background()
	name := demo.Index
	items := catalog.Generate(catalog.DefaultSeed, catalog.DefaultSize)
	last := items[len(items)-1].ID
	loaded := func(step string, want bool) {
		t.Helper()
		got, err := demoLoaded(ctx, c, name, last)
		if err != nil || got != want {
			t.Fatalf("%s: demoLoaded %v, %v; want %v", step, got, err, want)
		}
	}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: name, Shards: 4, Mapping: catalog.Mapping(), Query: demo.Query}); err != nil {
		t.Fatal(err)
	}
	loaded("index made", false)
	// Any pipeline revision will do (the demo's own plugins take minutes
	// to validate under the race detector).
	if _, err := c.SetPipeline(ctx, name, &api.PipelineSpec{Index: name}); err != nil {
		t.Fatal(err)
	}
	first := []byte(`{"id":"` + items[0].ID + `","name":"x"}`)
	if _, err := c.Put(ctx, name, first); err != nil {
		t.Fatal(err)
	}
	loaded("pipeline registered, the first item stored", false)
	if _, err := c.Put(ctx, name, []byte(`{"id":"`+last+`","name":"x"}`)); err != nil {
		t.Fatal(err)
	}
	loaded("the last item stored", true)
	if _, err := c.Delete(ctx, name, last); err != nil {
		t.Fatal(err)
	}
	loaded("the last item deleted since", true)
}
