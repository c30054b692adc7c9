package indexer

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/subject"
)

// EnsureDefaults fills zero fields only and is idempotent; Validate
// reports every problem, each naming its setting, and changes nothing.
func TestConfigDefaultsAndValidate(t *testing.T) {
	c := Config{DataDir: t.TempDir()}
	c.EnsureDefaults()
	want := Defaults
	want.DataDir, want.Logger = c.DataDir, c.Logger
	if !reflect.DeepEqual(c, want) || c.Logger == nil || c.Writes.ApplyInterval != DefaultApplyInterval || c.MaxBatch != shard.DefaultMaxBatch {
		t.Fatalf("defaults:\n%+v\nwant\n%+v", c, want)
	}
	if c.Logger != slog.Default() {
		t.Error("EnsureDefaults gave the logger attributes (the role's are New's)")
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	again := c
	again.EnsureDefaults()
	if !reflect.DeepEqual(again, c) {
		t.Error("EnsureDefaults changed a config it had filled")
	}

	// Set values, negative ones with a meaning among them, are kept.
	set := Config{SnapshotInterval: -1, Writes: shard.WriteOptions{ApplyInterval: -1, PersistNap: 3}, SnapshotTimeout: time.Second, MaxBatch: 9}
	before := set
	set.EnsureDefaults()
	before.Logger = set.Logger
	if !reflect.DeepEqual(set, before) {
		t.Errorf("EnsureDefaults changed set values:\n%+v\nwas\n%+v", set, before)
	}

	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"data dir", func(c *Config) { c.DataDir = "" }, []string{"indexer: data dir is required"}},
		{"every problem", func(c *Config) { c.Index, c.SnapshotTimeout, c.MaxBatch = "Bad Name", -time.Minute, -4 }, []string{
			`indexer: index: invalid index name "Bad Name"`, "indexer: snapshot timeout must be above 0, got -1m0s",
			"indexer: max batch must be 1 or more, got -4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := c
			tc.edit(&bad)
			before := bad
			err := bad.Validate()
			if err == nil {
				t.Fatal("a bad config validated")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v\nwant it to say %q", err, w)
				}
			}
			if n := len(strings.Split(err.Error(), "\n")); n != len(tc.want) {
				t.Errorf("Validate reported %d problems, want %d: %v", n, len(tc.want), err)
			}
			if !reflect.DeepEqual(bad, before) {
				t.Error("Validate changed the config")
			}
		})
	}
	bad := c
	bad.Index = "-x"
	if err := bad.Validate(); !errors.Is(err, subject.ErrBadName) {
		t.Errorf("a bad index name: %v, want it to wrap subject.ErrBadName", err)
	}
}
