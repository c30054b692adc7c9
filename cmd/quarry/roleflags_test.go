package main

import (
	"io"
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/registry"
	"github.com/quarrysearch/quarry/searcher"
)

// The role flags show the libraries' defaults, and a config built from
// untouched flags is, once its defaults are filled, the library's own.
func TestRoleFlagDefaults(t *testing.T) {
	t.Parallel()
	var rf roleFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf.registerIndexer(fs)
	rf.registerSearcher(fs)
	rf.registerBroker(fs)
	rf.registerDrain(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if searcher.Defaults.DrainTimeout != broker.Defaults.DrainTimeout {
		t.Errorf("one --drain-timeout serves both, but the searcher's default is %s and the broker's %s",
			searcher.Defaults.DrainTimeout, broker.Defaults.DrainTimeout)
	}
	if searcher.Defaults.MaxBatch != indexer.Defaults.MaxBatch {
		t.Errorf("one --max-batch serves both, but the searcher's default is %d and the indexer's %d",
			searcher.Defaults.MaxBatch, indexer.Defaults.MaxBatch)
	}
	for _, f := range []struct {
		name string
		want any
	}{
		{"drain-timeout", searcher.Defaults.DrainTimeout},
		{"snapshot-interval", indexer.Defaults.SnapshotInterval},
		{"max-batch", indexer.Defaults.MaxBatch},
		{"indexer-apply-interval", indexer.Defaults.Writes.ApplyInterval},
		{"slow-shard", searcher.Defaults.SlowRequest},
		{"heavy-request", searcher.Defaults.HeavyAfter},
		{"fault-every", searcher.Defaults.FaultEvery},
		{"workers", searcher.Defaults.Workers},
		{"heavy-workers", searcher.Defaults.HeavyWorkers},
		{"heavy-pause", searcher.Defaults.HeavyPause},
		{"heavy-linger", searcher.Defaults.HeavyLinger},
		{"rate-unit", broker.Defaults.RateUnit},
		{"team-max-search-memory", broker.Defaults.TeamMaxSearchMemory},
		{"max-explain", broker.Defaults.MaxExplain},
		{"shard-depth", broker.Defaults.ShardDepth},
		{"max-response-bytes", int64(broker.Defaults.MaxResponseBytes)},
		{"max-shard-reply-bytes", int64(searcher.Defaults.MaxReplyBytes)},
		{"gate-timeout", registry.DefaultGateTimeout},
		{"gate-wait", registry.DefaultGateWait},
	} {
		got := flagValue(fs, f.name)
		if got != f.want {
			t.Errorf("--%s defaults to %v, the library to %v", f.name, got, f.want)
		}
	}

	// Writes: the flags name the shard's defaults, the libraries leave
	// them to the shard (the indexer's ApplyInterval aside).
	s, ls := *rf.searcher(), searcher.Config{}
	if s.Writes != (shard.WriteOptions{ApplyInterval: shard.DefaultApplyInterval, PersistNap: shard.DefaultPersistNap, MergeFloor: shard.DefaultMergeFloor, SegmentsPerTier: shard.DefaultSegmentsPerTier, FreshSegments: shard.DefaultFreshSegments}) {
		t.Errorf("searcher writes from the flags: %+v", s.Writes)
	}
	s.Writes = shard.WriteOptions{}
	s.EnsureDefaults()
	ls.EnsureDefaults()
	if !reflect.DeepEqual(s, ls) {
		t.Errorf("searcher config from the flags:\n%+v\nthe library's defaults:\n%+v", s, ls)
	}
	ix, lix := *rf.indexer(), indexer.Config{}
	ix.Writes.PersistNap, ix.Writes.MergeFloor, ix.Writes.SegmentsPerTier, ix.Writes.FreshSegments = 0, 0, 0, 0
	ix.EnsureDefaults()
	lix.EnsureDefaults()
	if !reflect.DeepEqual(ix, lix) {
		t.Errorf("indexer config from the flags:\n%+v\nthe library's defaults:\n%+v", ix, lix)
	}
}

// flagValue is the value of fs's flag name as its Go type (a size flag's
// as an int64).
func flagValue(fs *pflag.FlagSet, name string) any {
	var v any
	var err error
	switch fs.Lookup(name).Value.Type() {
	case "duration":
		v, err = fs.GetDuration(name)
	case "int":
		v, err = fs.GetInt(name)
	case "uint":
		v, err = fs.GetUint(name)
	case "float64":
		v, err = fs.GetFloat64(name)
	default:
		v = fs.Lookup(name).Value.(interface{ Get() any }).Get()
	}
	if err != nil {
		return err
	}
	return v
}
