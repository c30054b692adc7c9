package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/backoff"
	"github.com/quarrysearch/quarry/internal/subject"
)

// Options tunes the JetStream resources Open creates.
type Options struct {
	// Replicas is the JetStream replication factor Quarry's resources must
	// have. Zero adopts the deployment's: resources that exist keep
	// theirs, and missing ones are made like the existing ones (1 on a
	// deployment that has none). Replication is a property of the
	// deployment, decided once (the first role started with --replicas, or
	// `quarry init --replicas N`): a non-zero Replicas that differs from
	// the resources that exist is refused with a *ReplicasError, unless
	// Rescale.
	Replicas int
	// Rescale changes the replication of existing resources to Replicas
	// (`quarry init`), instead of refusing the difference.
	Rescale bool
	// Bind opens the resources that exist and creates none (the Go
	// client, and the roles started alone): a missing one is an
	// api.CodeUnavailable error naming it and `quarry init`. Rescale is
	// then ignored, and Replicas, when set, is a check: the resources
	// that exist must have that many, or Open fails with a
	// *ReplicasError.
	Bind bool
	// Wait, with Bind, waits while a resource is missing, for `quarry
	// init` (or `quarry serve`) to make it, saying so in the log once,
	// until ctx is done: roles started beside the init job, or before
	// it, come up once it has run, and never race it to create.
	Wait bool
	// ManifestHistory is how many manifests per index KV keeps (default 8).
	ManifestHistory int
	// Logger says, once per resource, that Open is waiting for JetStream
	// (default slog.Default()).
	Logger *slog.Logger
}

// Store gives access to Quarry's JetStream resources.
type Store struct {
	JS        jetstream.JetStream
	Indexes   jetstream.KeyValue
	Manifests jetstream.KeyValue
	Segments  jetstream.ObjectStore
	Docs      jetstream.Stream
	// Plugins holds plugin binaries, named by digest ("sha256:<hex>").
	Plugins jetstream.ObjectStore
	// Pipelines holds each index's pipeline, with history.
	Pipelines jetstream.KeyValue
	// PluginVersions records every pushed version and its validation,
	// keyed <index>.<plugin>.<hex digest>.
	PluginVersions jetstream.KeyValue
	// Shadow holds brokers' shadow-ranking tallies.
	Shadow jetstream.KeyValue
	// Teams holds each team's limits (api.TeamSettings).
	Teams jetstream.KeyValue
	// Tokens holds HTTP API tokens (api.Token) by the sha256 of each.
	Tokens jetstream.KeyValue
	// Events records plugin events (automatic fallbacks).
	Events jetstream.KeyValue
	// Judgements holds each index's judgement lists, versioned, and its
	// relevance gate (see judgements.go).
	Judgements jetstream.KeyValue
	// Interleave holds interleaved searches (api.InterleavedQuery) for a
	// day; InterleaveTallies the experiments' tallies (api.CanaryStats).
	Interleave        jetstream.KeyValue
	InterleaveTallies jetstream.KeyValue
	// Queries holds recorded search requests (a sample, when brokers are
	// asked to record).
	Queries jetstream.Stream
	// Uploads stages plugin binaries uploaded in chunks through the admin
	// API until they are registered.
	Uploads jetstream.Stream
	// UserEvents holds what users did with results (api.UserEvent), per
	// index, for UserEventsMaxAge (see events.go).
	UserEvents jetstream.Stream
	// PluginLogs keeps the recent lines of the plugins brokers run, in
	// memory (see PluginLogsStreamConfig).
	PluginLogs jetstream.Stream
	// Fields holds each index's field paths, for its limit on them
	// (api.DocumentLimits.MaxIndexFields; see fields.go).
	Fields jetstream.KeyValue
	// Rejected keeps the records of the documents the stream acknowledged
	// that the indexer could not apply, per index (see
	// RejectedStreamConfig and rejected.go).
	Rejected jetstream.Stream
	// Aliases holds index aliases (api.Alias) by name (see aliases.go).
	Aliases jetstream.KeyValue

	// uploadLocks holds a *sync.Mutex per team: see lockTeamUploads.
	uploadLocks sync.Map
}

// PluginLogsStreamConfig bounds the kept plugin lines: in memory (lines
// are for debugging: losing them with the server costs nothing, and a
// line never waits for a disk), api.MaxPluginLogLines per team and
// plugin, a day, 64 MiB in all; the oldest go first.
var PluginLogsStreamConfig = jetstream.StreamConfig{Name: subject.PluginLogsStream, Description: "Quarry plugin log lines, recent ones per team and plugin",
	Subjects: []string{subject.PluginLogsPrefix + ".>"}, Storage: jetstream.MemoryStorage, MaxMsgsPerSubject: api.MaxPluginLogLines,
	MaxAge: 24 * time.Hour, MaxBytes: 64 << 20, MaxMsgSize: 32 << 10, Discard: jetstream.DiscardOld}

// resource is one of Quarry's JetStream resources as Open opens it.
type resource struct {
	what string // "bucket quarry-indexes"
	open func(ctx context.Context) error
}

// Resources is how many JetStream streams Open makes (its key-value
// buckets and object stores are streams too): what `quarry init` lists.
const Resources = 21

// Open creates or binds to every resource.
func Open(ctx context.Context, js jetstream.JetStream, opts Options) (*Store, error) {
	if opts.Replicas != 0 || opts.Rescale {
		if err := api.CheckReplicas(opts.Replicas); err != nil {
			return nil, err
		}
	}
	if opts.ManifestHistory <= 0 {
		opts.ManifestHistory = 8
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Store{JS: js}
	repl := &replicas{}
	if !opts.Bind {
		var err error
		if repl, err = replication(ctx, js, opts); err != nil {
			return nil, err
		}
	}
	buckets := []struct {
		kv  *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&s.Indexes, jetstream.KeyValueConfig{Bucket: subject.IndexesBucket, Description: "Quarry index definitions", History: 4}},
		{&s.Manifests, jetstream.KeyValueConfig{Bucket: subject.ManifestsBucket, Description: "Quarry snapshot manifests", History: uint8(min(opts.ManifestHistory, 64))}},
		{&s.Pipelines, jetstream.KeyValueConfig{Bucket: subject.PipelinesBucket, Description: "Quarry index pipelines", History: 64}},
		{&s.PluginVersions, jetstream.KeyValueConfig{Bucket: subject.PluginVersionsBucket, Description: "Quarry pushed plugin versions"}},
		{&s.Shadow, jetstream.KeyValueConfig{Bucket: subject.ShadowBucket, Description: "Quarry shadow-ranking tallies, per broker", TTL: 24 * time.Hour}},
		{&s.Events, jetstream.KeyValueConfig{Bucket: subject.EventsBucket, Description: "Quarry plugin events", TTL: 7 * 24 * time.Hour}},
		{&s.Teams, jetstream.KeyValueConfig{Bucket: subject.TeamsBucket, Description: "Quarry team limits", History: 8}},
		{&s.Tokens, jetstream.KeyValueConfig{Bucket: subject.TokensBucket, Description: "Quarry HTTP API tokens, by sha256"}},
		{&s.Interleave, jetstream.KeyValueConfig{Bucket: subject.InterleaveBucket, Description: "Quarry interleaved searches: which side placed each result", TTL: 24 * time.Hour}},
		{&s.InterleaveTallies, jetstream.KeyValueConfig{Bucket: subject.InterleaveTalliesBucket, Description: "Quarry interleaving experiments' tallies"}},
		{&s.Judgements, jetstream.KeyValueConfig{Bucket: subject.JudgementsBucket, Description: "Quarry judgement lists and relevance gates", History: JudgementHistory}},
		{&s.Fields, jetstream.KeyValueConfig{Bucket: subject.FieldsBucket, Description: "Quarry index field paths, for each index's limit on them"}},
		{&s.Aliases, jetstream.KeyValueConfig{Bucket: subject.AliasesBucket, Description: "Quarry index aliases", History: 8}},
	}
	// Every resource, as a name and what opens it: made by a creator,
	// bound to otherwise.
	var resources []resource
	for _, b := range buckets {
		b.cfg.Storage, b.cfg.Replicas = jetstream.FileStorage, repl.of("KV_"+b.cfg.Bucket)
		resources = append(resources, resource{"bucket " + b.cfg.Bucket, func(ctx context.Context) (err error) {
			if opts.Bind {
				*b.kv, err = js.KeyValue(ctx, b.cfg.Bucket)
				return err
			}
			*b.kv, err = js.CreateOrUpdateKeyValue(ctx, b.cfg)
			return err
		}})
	}
	objects := []struct {
		os  *jetstream.ObjectStore
		cfg jetstream.ObjectStoreConfig
	}{
		{&s.Segments, jetstream.ObjectStoreConfig{Bucket: subject.SegmentsBucket, Description: "Quarry shard snapshots"}},
		{&s.Plugins, jetstream.ObjectStoreConfig{Bucket: subject.PluginsBucket, Description: "Quarry plugin binaries, by sha256"}},
	}
	for _, o := range objects {
		o.cfg.Storage, o.cfg.Replicas = jetstream.FileStorage, repl.of("OBJ_"+o.cfg.Bucket)
		resources = append(resources, resource{"object store " + o.cfg.Bucket, func(ctx context.Context) (err error) {
			if opts.Bind {
				*o.os, err = js.ObjectStore(ctx, o.cfg.Bucket)
				return err
			}
			*o.os, err = js.CreateOrUpdateObjectStore(ctx, o.cfg)
			return err
		}})
	}
	streams := []struct {
		st  *jetstream.Stream
		cfg jetstream.StreamConfig
	}{
		{&s.Queries, jetstream.StreamConfig{Name: subject.QueriesStream, Description: "Quarry recorded search requests, for replays",
			Subjects: []string{subject.QueriesPrefix + ".>"}, MaxAge: 7 * 24 * time.Hour, MaxBytes: 1 << 30, Discard: jetstream.DiscardOld}},
		// Uploads refuse new chunks when full rather than drop the chunks
		// of uploads in progress.
		{&s.Uploads, jetstream.StreamConfig{Name: subject.UploadsStream, Description: "Quarry plugin uploads in progress",
			Subjects: []string{subject.UploadsPrefix + ".>"}, MaxAge: time.Hour, MaxBytes: 1 << 30, Discard: jetstream.DiscardNew,
			Duplicates: 10 * time.Minute}},
		{&s.UserEvents, jetstream.StreamConfig{Name: subject.UserEventsStream, Description: "Quarry user events on search results (clicks, purchases…), per index",
			Subjects: []string{subject.UserEventsPrefix + ".>"}, MaxAge: UserEventsMaxAge, MaxBytes: UserEventsMaxBytes, Discard: jetstream.DiscardOld}},
		// Atomic batches let a bulk ingest have many documents stored,
		// and synced to disk, with one acknowledgement (client.Bulk).
		{&s.Docs, jetstream.StreamConfig{Name: subject.DocsStream, Description: DocsDescription,
			Subjects: []string{subject.DocsPrefix + ".>"}, MaxMsgsPerSubject: 1, Duplicates: 2 * time.Minute, AllowDirect: true,
			AllowAtomicPublish: true}},
		{&s.PluginLogs, PluginLogsStreamConfig},
		{&s.Rejected, RejectedStreamConfig},
	}
	for _, st := range streams {
		if st.cfg.Storage != jetstream.MemoryStorage {
			st.cfg.Storage = jetstream.FileStorage
		}
		st.cfg.Replicas = repl.of(st.cfg.Name)
		resources = append(resources, resource{"stream " + st.cfg.Name, func(ctx context.Context) (err error) {
			if opts.Bind {
				*st.st, err = js.Stream(ctx, st.cfg.Name)
				return err
			}
			*st.st, err = js.CreateOrUpdateStream(ctx, st.cfg)
			if err != nil && !transient(err) && st.cfg.AllowAtomicPublish {
				// A server older than 2.12 knows no atomic batches (and
				// in strict mode refuses the field): documents are then
				// published one at a time.
				st.cfg.AllowAtomicPublish = false
				*st.st, err = js.CreateOrUpdateStream(ctx, st.cfg)
			}
			return err
		}})
	}
	if !opts.Bind {
		// Creators go in an order of their own. JetStream answers
		// neither of two creations of one stream at once (two `quarry
		// init`s, or init beside serve): both wait out their attempt,
		// then find it made (untilReady). In one order the two met on
		// every resource (30 s, then both gave up, on a fresh
		// three-member cluster; TestDeployCluster); in orders of their
		// own, each finds much of what it comes to made by the other.
		rand.Shuffle(len(resources), func(i, j int) { resources[i], resources[j] = resources[j], resources[i] })
	}
	for _, r := range resources {
		if err := opts.open(ctx, r.what, r.open); err != nil {
			return nil, fmt.Errorf("open %s: %w", r.what, err)
		}
	}
	if opts.Bind && opts.Replicas != 0 {
		if _, err := replication(ctx, js, Options{Replicas: opts.Replicas, Logger: opts.Logger}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// open runs lookup (bound) or create until JetStream answers
// (untilReady). A resource missing where o binds is an error naming
// `quarry init`, or with o.Wait is waited for, polled, said once in the
// log.
func (o *Options) open(ctx context.Context, what string, do func(context.Context) error) error {
	pause, since, logged := backoff.New(100*time.Millisecond, time.Second), time.Now(), false
	for {
		err := untilReady(ctx, o.Logger, what, do)
		notFound := errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
		switch {
		case err == nil:
			if logged {
				o.Logger.Info("Quarry's resource is made: bound", "resource", what, "waited", time.Since(since).Round(time.Millisecond))
			}
			return nil
		case logged && ctx.Err() != nil:
			// The context ended during a try after the resource was seen
			// missing: what the role waited for is still init.
			return o.notMade(what, since)
		case !o.Bind || !o.Wait || !notFound:
			return missing(err, what)
		}
		if !logged {
			o.Logger.Warn("waiting for Quarry's resources to be made: run `quarry init` (or start `quarry serve`, which makes them)", "resource", what)
			logged = true
		}
		if pause.Wait(ctx) != nil {
			return o.notMade(what, since)
		}
	}
}

// notMade is the error of a role that waited from since for `quarry
// init` to make what, until its start-up time ended.
func (o *Options) notMade(what string, since time.Time) error {
	return api.Errorf(api.CodeUnavailable, "Quarry's %s was not made within the start-up time (waited %s): run `quarry init` (or start `quarry serve`, which makes it)", what, time.Since(since).Round(time.Second))
}

// missing turns a lookup's "not found" into an error that says how
// Quarry's resources are made.
func missing(err error, what string) error {
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return api.Errorf(api.CodeUnavailable, "Quarry's %s does not exist on this NATS deployment: run `quarry init` (or start `quarry serve`, which makes it)", what)
	}
	return err
}

// CreateIndex validates def and stores it. It fails with api.ErrConflict if
// the index exists. def.Mapping is stored as given: the caller makes it
// canonical first (indexmap.Canonical, as the admin service's
// index.create does), so this package, and the Go client that opens it,
// link no bleve.
func (s *Store) CreateIndex(ctx context.Context, def api.IndexDefinition) (api.IndexDefinition, error) {
	if err := subject.ValidIndexName(def.Name); err != nil {
		return def, api.BadRequest("%v", err)
	}
	if def.Shards < 1 || def.Shards > api.MaxShards {
		return def, api.BadRequest("shards must be between 1 and %d, got %d", api.MaxShards, def.Shards)
	}
	if def.Team != "" {
		if err := subject.ValidIndexName(def.Team); err != nil {
			return def, api.BadRequest("team %q: use 1-64 of a-z, 0-9, '-' and '_'", def.Team)
		}
	}
	if err := def.Query.Validate(); err != nil {
		return def, err
	}
	if err := def.Documents.Validate(); err != nil {
		return def, err
	}
	if _, _, err := s.Alias(ctx, def.Name); err == nil {
		return def, api.Errorf(api.CodeConflict, "an alias is named %q: an index needs a name of its own", def.Name)
	} else if api.CodeOf(err) != api.CodeNotFound {
		return def, err
	}
	def.Created = time.Now().UTC().Truncate(time.Millisecond)
	b, err := json.Marshal(def)
	if err != nil {
		return def, err
	}
	if _, err := s.Indexes.Create(ctx, def.Name, b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return def, api.Errorf(api.CodeConflict, "index %q already exists", def.Name)
		}
		return def, fmt.Errorf("store index %q: %w", def.Name, err)
	}
	return def, nil
}

// Index returns an index's definition, or an api.ErrNotFound error.
func (s *Store) Index(ctx context.Context, name string) (api.IndexDefinition, error) {
	var def api.IndexDefinition
	if err := subject.ValidIndexName(name); err != nil {
		return def, api.BadRequest("%v", err)
	}
	e, err := s.Indexes.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return def, api.NotFound("index %q does not exist", name)
	}
	if err != nil {
		return def, fmt.Errorf("read index %q: %w", name, err)
	}
	return DecodeIndex(e.Value())
}

// DecodeIndex decodes a stored index definition.
func DecodeIndex(b []byte) (api.IndexDefinition, error) {
	var def api.IndexDefinition
	if err := json.Unmarshal(b, &def); err != nil {
		return def, fmt.Errorf("decode index definition: %w", err)
	}
	return def, nil
}

// SetQuerySettings replaces an index's query settings (compare-and-set on
// the definition's revision, so a concurrent change is not lost).
func (s *Store) SetQuerySettings(ctx context.Context, name string, qs api.QuerySettings) (api.IndexDefinition, error) {
	if err := qs.Validate(); err != nil {
		return api.IndexDefinition{}, err
	}
	for range 5 {
		e, err := s.Indexes.Get(ctx, name)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return api.IndexDefinition{}, api.NotFound("index %q does not exist", name)
		}
		if err != nil {
			return api.IndexDefinition{}, fmt.Errorf("read index %q: %w", name, err)
		}
		def, err := DecodeIndex(e.Value())
		if err != nil {
			return def, err
		}
		def.Query = qs
		b, err := json.Marshal(def)
		if err != nil {
			return def, err
		}
		if _, err := s.Indexes.Update(ctx, name, b, e.Revision()); err == nil {
			return def, nil
		} else if !isWrongSeq(err) {
			return def, fmt.Errorf("update index %q: %w", name, err)
		}
	}
	return api.IndexDefinition{}, api.Errorf(api.CodeConflict, "index %q is being changed concurrently; try again", name)
}

// IndexRevision returns an index's definition and the revision of its
// entry (for SetMapping), or an api.ErrNotFound error.
func (s *Store) IndexRevision(ctx context.Context, name string) (api.IndexDefinition, uint64, error) {
	if err := subject.ValidIndexName(name); err != nil {
		return api.IndexDefinition{}, 0, api.BadRequest("%v", err)
	}
	e, err := s.Indexes.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return api.IndexDefinition{}, 0, api.NotFound("index %q does not exist", name)
	}
	if err != nil {
		return api.IndexDefinition{}, 0, fmt.Errorf("read index %q: %w", name, err)
	}
	def, err := DecodeIndex(e.Value())
	return def, e.Revision(), err
}

// SetMapping replaces def's mapping with mapping (canonical, checked by
// the caller), if its entry is still at revision rev: a concurrent change
// of the definition is an api.ErrConflict error, not overwritten. It
// returns the definition stored and its new revision, which orders
// mapping changes (the shards' markers carry it).
func (s *Store) SetMapping(ctx context.Context, def api.IndexDefinition, rev uint64, mapping json.RawMessage) (api.IndexDefinition, uint64, error) {
	def.Mapping = mapping
	b, err := json.Marshal(def)
	if err != nil {
		return def, 0, err
	}
	next, err := s.Indexes.Update(ctx, def.Name, b, rev)
	if isWrongSeq(err) {
		return def, 0, api.Errorf(api.CodeConflict, "index %q was changed meanwhile; try again", def.Name)
	}
	if err != nil {
		return def, 0, fmt.Errorf("update index %q: %w", def.Name, err)
	}
	return def, next, nil
}

// ListIndexes returns every index definition, sorted by name.
func (s *Store) ListIndexes(ctx context.Context) ([]api.IndexDefinition, error) {
	lister, err := s.Indexes.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	var defs []api.IndexDefinition
	for k := range lister.Keys() {
		def, err := s.Index(ctx, k)
		if errors.Is(err, api.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		defs = append(defs, def)
	}
	slices.SortFunc(defs, func(a, b api.IndexDefinition) int { return strings.Compare(a.Name, b.Name) })
	return defs, nil
}

// DeleteIndex removes an index and everything kept under its name, so
// that an index created later with the name (by any team) inherits
// nothing: its documents, manifest, snapshots and field paths, its
// pipeline and its history, its plugin versions (and their configs,
// which may hold a team's secrets), plugin events, shadow and
// interleaving tallies, judgement lists and gate, user events, recorded
// queries, staged uploads and the records of its rejected documents.
// An index an alias points at is not deleted (api.ErrConflict, naming
// the aliases). What is kept is purged before the definition is deleted (a failure
// leaves the index there, to delete again) and once more after (what
// roles wrote meanwhile); then the roles stop serving it.
func (s *Store) DeleteIndex(ctx context.Context, name string) error {
	def, err := s.Index(ctx, name)
	if err != nil {
		return err
	}
	aliases, err := s.AliasesOf(ctx, name)
	if err != nil {
		return err
	}
	if len(aliases) > 0 {
		return api.Errorf(api.CodeConflict, "index %q is what alias %s points at: switch the alias to another index or remove it first (quarry alias switch, quarry alias rm)",
			name, strings.Join(aliases, ", "))
	}
	if err := s.purgeIndex(ctx, def); err != nil {
		return err
	}
	if err := s.Indexes.Delete(ctx, name); err != nil {
		return fmt.Errorf("delete index %q: %w", name, err)
	}
	if err := s.purgeIndex(ctx, def); err != nil {
		return err
	}
	return s.deleteObjects(ctx, name+"/", func(string) bool { return true })
}

// purgeIndex removes what is kept under an index's name, but its
// definition and snapshots (DeleteIndex).
func (s *Store) purgeIndex(ctx context.Context, def api.IndexDefinition) error {
	name := def.Name
	for _, st := range []struct {
		what    string
		stream  jetstream.Stream
		subject string
	}{
		{"documents", s.Docs, subject.DocsOfIndex(name)},
		{"user events", s.UserEvents, subject.UserEventsPrefix + "." + name},
		{"recorded queries", s.Queries, subject.QueriesPrefix + "." + name},
		{"staged uploads", s.Uploads, subject.UploadsPrefix + "." + def.TeamOf() + "." + name + ".>"},
		{"rejected documents", s.Rejected, subject.Rejected(name)},
	} {
		if err := st.stream.Purge(ctx, jetstream.WithPurgeSubject(st.subject)); err != nil {
			return fmt.Errorf("purge the %s of %q: %w", st.what, name, err)
		}
	}
	for _, kv := range []struct {
		what string
		kv   jetstream.KeyValue
	}{{"manifest", s.Manifests}, {"field paths", s.Fields}, {"pipeline", s.Pipelines}} {
		if err := kv.kv.Purge(ctx, name); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("delete the %s of %q: %w", kv.what, name, err)
		}
	}
	for _, kv := range []struct {
		what string
		kv   jetstream.KeyValue
	}{{"judgement lists", s.Judgements}, {"plugin versions", s.PluginVersions}, {"plugin events", s.Events},
		{"shadow tallies", s.Shadow}, {"interleaved searches", s.Interleave}, {"interleaving tallies", s.InterleaveTallies}} {
		if err := purgeKeys(ctx, kv.kv, name+".>"); err != nil {
			return fmt.Errorf("delete the %s of %q: %w", kv.what, name, err)
		}
	}
	return nil
}

// purgeKeys purges the keys of kv that match filter.
func purgeKeys(ctx context.Context, kv jetstream.KeyValue, filter string) error {
	keys, err := kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return err
	}
	defer keys.Stop()
	var names []string
	for k := range keys.Keys() {
		names = append(names, k)
	}
	for _, k := range names {
		if err := kv.Purge(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("remove %s: %w", k, err)
		}
	}
	return nil
}

// deleteObjects deletes the segment objects whose names start with prefix
// and for which del returns true.
func (s *Store) deleteObjects(ctx context.Context, prefix string, del func(name string) bool) error {
	infos, err := s.Segments.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	for _, o := range infos {
		if !strings.HasPrefix(o.Name, prefix) || !del(o.Name) {
			continue
		}
		if err := s.Segments.Delete(ctx, o.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("delete snapshot %s: %w", o.Name, err)
		}
	}
	return nil
}

// ShardLastSeq is the stream sequence of the last message stored on one
// shard of index (a document or a tombstone), 0 if there is none: what
// the shard's replica must have applied to hold every write to it.
func (s *Store) ShardLastSeq(ctx context.Context, index string, shard int) (uint64, error) {
	last, err := s.Docs.GetLastMsgForSubject(ctx, subject.DocsOfShard(index, shard))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("last message of shard %d of %q: %w", shard, index, err)
	}
	return last.Sequence, nil
}
