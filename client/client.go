package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/backoff"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/subject"
)

// Options configures a Client. Zero values are documented defaults.
type Options struct {
	// MaxDocBytes is the largest document accepted (default 1 MiB).
	MaxDocBytes int
	// RequestTimeout bounds a search with no context deadline and no
	// timeout_ms (default 30s).
	RequestTimeout time.Duration
	// SearchableWait bounds WaitSearchable (and Bulk's WaitSearchable,
	// the HTTP door's ?wait=searchable) when its context has no deadline
	// (default DefaultSearchableWait, 1m).
	SearchableWait time.Duration
	// Propagate, if set, adds a search request's trace context to its
	// NATS headers (h is never nil): for example OpenTelemetry's W3C
	// traceparent of ctx's span, so the broker's and searchers' spans
	// join the caller's trace. The client itself sends only the request
	// id (WithRequestID) and links no tracer.
	Propagate func(ctx context.Context, h nats.Header)
}

// maxAsyncPending bounds unacknowledged async publishes per client; Bulk's
// window stays below it.
const maxAsyncPending = 8192

// Client talks to a Quarry deployment over a NATS connection.
type Client struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	opts Options

	storeMu sync.Mutex
	store   *meta.Store // opened on first use: see metaStore

	mu   sync.Mutex
	defs map[string]api.IndexDefinition
	// defsWatch follows the indexes bucket (updates only) from the first
	// definition read, so that a cached definition is dropped once its
	// index changes or is deleted (and perhaps created again with other
	// shards, which a write routed by the old one would miss). It is
	// drained where definitions are read: no goroutine of the client's.
	defsWatch jetstream.KeyWatcher
	// aliasWatch follows the aliases bucket beside defsWatch: a switched
	// or removed alias's cached definition is dropped.
	aliasWatch jetstream.KeyWatcher

	// fieldsMu guards fields: what the client knows of each index's field
	// paths (see admitFields).
	fieldsMu sync.Mutex
	fields   map[string]*indexFields
}

// New makes a client on an open NATS connection. Quarry's JetStream
// resources are opened on first use, never created (`quarry init` and
// `quarry serve` make them; Init is the Go call): a client that only
// searches and manages plugins (see PushPlugin) needs no JetStream
// permissions, and one that writes on a deployment without them gets an
// error naming `quarry init`.
func New(ctx context.Context, nc *nats.Conn, opts Options) (*Client, error) {
	if opts.MaxDocBytes <= 0 {
		opts.MaxDocBytes = api.DefaultMaxDocBytes
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxAsyncPending))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Client{nc: nc, js: js, opts: opts, defs: map[string]api.IndexDefinition{}, fields: map[string]*indexFields{}}, nil
}

// Init creates Quarry's JetStream streams and buckets on the deployment nc
// is connected to, with replicas replicas each, changing those that exist
// to it, and returns each stream's replicas as they are then (by stream
// name). It is the one place a deployment's replication changes (`quarry
// init`); roles and clients adopt it.
func Init(ctx context.Context, nc *nats.Conn, replicas int) (map[string]int, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if _, err := meta.Open(ctx, js, meta.Options{Replicas: replicas, Rescale: true}); err != nil {
		return nil, err
	}
	return meta.Replication(ctx, js, nil)
}

// WithRequestID returns ctx carrying a request id: searches made with it
// send it to the broker, which uses it in every service's logs and traces
// and returns it in the response (api.SearchResponse.RequestID). Without
// one the broker makes one. An id must be 1 to 128 printable ASCII
// characters; an unusable one is replaced.
func WithRequestID(ctx context.Context, id string) context.Context {
	return requestid.With(ctx, id)
}

// headers are a search request's headers: its request id, and its trace
// context if Options.Propagate is set; nil when there is neither.
func (c *Client) headers(ctx context.Context) nats.Header {
	id := requestid.From(ctx)
	if id == "" && c.opts.Propagate == nil {
		return nil
	}
	h := nats.Header{}
	if id != "" {
		h.Set(requestid.Header, id)
	}
	if c.opts.Propagate != nil {
		c.opts.Propagate(ctx, h)
	}
	return h
}

// metaStore opens (binds to) Quarry's JetStream resources on first use;
// a failed open is retried by the next call.
func (c *Client) metaStore(ctx context.Context) (*meta.Store, error) {
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	if c.store != nil {
		return c.store, nil
	}
	st, err := meta.Open(ctx, c.js, meta.Options{Bind: true})
	if err != nil {
		return nil, err
	}
	c.store = st
	return st, nil
}

// CreateIndex creates an index with shards shards and a bleve mapping in
// JSON (nil for Quarry's default). It fails with an error matching
// api.ErrConflict if the index exists and api.ErrBadRequest if the name,
// shard count or mapping is invalid.
func (c *Client) CreateIndex(ctx context.Context, name string, shards int, mapping json.RawMessage) (api.IndexDefinition, error) {
	return c.CreateIndexDef(ctx, api.IndexDefinition{Name: name, Shards: shards, Mapping: mapping})
}

// SetQuerySettings changes how an index turns a request's text into a
// query. Brokers pick the change up without a restart.
func (c *Client) SetQuerySettings(ctx context.Context, name string, qs api.QuerySettings) (api.IndexDefinition, error) {
	st, err := c.metaStore(ctx)
	if err != nil {
		return api.IndexDefinition{}, err
	}
	return st.SetQuerySettings(ctx, name, qs)
}

// controlWait is how long CreateIndexDef waits for a role that serves
// the control API.
const controlWait = 10 * time.Second

// CreateIndexDef creates an index from a full definition (name, shards,
// mapping and query settings). A broker's or an indexer's node checks the
// mapping and stores the definition, over the control API (subject
// quarry.v1.control.index.create), which no team's permissions reach;
// with neither running it waits for one up to 10 seconds.
func (c *Client) CreateIndexDef(ctx context.Context, def api.IndexDefinition) (api.IndexDefinition, error) {
	if err := subject.ValidIndexName(def.Name); err != nil {
		return api.IndexDefinition{}, api.BadRequest("%v", err)
	}
	body, _ := json.Marshal(def)
	err := c.control(ctx, "index.create", fmt.Sprintf("create index %q", def.Name), body, &def)
	if err == nil {
		// Documents written next need the definition. Reading it back
		// could miss it: a replica of the index bucket that has not yet
		// applied the write may answer the read (JetStream's direct
		// get), "index does not exist" right after it was created.
		c.mu.Lock()
		c.defs[def.Name] = def
		c.mu.Unlock()
	}
	return def, err
}

// control asks the control API's op (subject.Control) with body, for
// the answer in out. Roles started a moment ago may not serve it yet: it
// waits for one a while (controlWait), as a deployment's first steps
// (init, the roles, the first index) run one right after another.
func (c *Client) control(ctx context.Context, op, what string, body []byte, out any) error {
	start := time.Now()
	pause := backoff.New(20*time.Millisecond, time.Second)
	for {
		msg := nats.NewMsg(subject.Control(op))
		msg.Header, msg.Data = c.headers(ctx), body
		err := c.call(ctx, what, msg, out)
		var none noResponder
		if !errors.As(err, &none) {
			return err
		}
		if time.Since(start) >= controlWait {
			return api.Errorf(api.CodeUnavailable, "%s: no broker or indexer is running (each serves the control API) after %s", what, controlWait)
		}
		if err := pause.Wait(ctx); err != nil {
			return fmt.Errorf("%s: no broker or indexer is running: %w", what, err)
		}
	}
}

// ChangeMapping changes an index's mapping in place: mapping is the whole
// new mapping (bleve's JSON), which may only add fields, types and
// analysis components to the index's, and only fields none of its
// documents holds yet; any other change is refused with the reason
// (api.ErrBadRequest, or api.ErrConflict for a field documents hold), and
// takes a reindex into a new index (Reindex) and an alias switch.
// Documents written before the change keep how they were indexed; those
// after it are indexed with the new mapping on every replica, which
// keeps serving searches throughout. Asking again for the mapping the
// index has is harmless. It returns the definition as stored.
func (c *Client) ChangeMapping(ctx context.Context, index string, mapping json.RawMessage) (api.IndexDefinition, error) {
	if err := subject.ValidIndexName(index); err != nil {
		return api.IndexDefinition{}, api.BadRequest("%v", err)
	}
	body, err := json.Marshal(api.MappingChange{Index: index, Mapping: mapping})
	if err != nil {
		return api.IndexDefinition{}, api.BadRequest("mapping: %v", err)
	}
	var def api.IndexDefinition
	if err := c.control(ctx, "index.mapping", fmt.Sprintf("change the mapping of index %q", index), body, &def); err != nil {
		return def, err
	}
	c.mu.Lock()
	c.defs[def.Name] = def
	c.mu.Unlock()
	return def, nil
}

// Index returns an index's definition (api.ErrNotFound if there is none).
func (c *Client) Index(ctx context.Context, name string) (api.IndexDefinition, error) {
	st, err := c.metaStore(ctx)
	if err != nil {
		return api.IndexDefinition{}, err
	}
	return st.Index(ctx, name)
}

// Indexes lists every index.
func (c *Client) Indexes(ctx context.Context) ([]api.IndexDefinition, error) {
	st, err := c.metaStore(ctx)
	if err != nil {
		return nil, err
	}
	return st.ListIndexes(ctx)
}

// IndexStatus is an index's definition, its live document count and its
// current snapshot.
type IndexStatus struct {
	api.IndexDefinition
	Generation uint64 `json:"generation"`
	// Docs is how many documents the index holds now, as searches see
	// them: the searchers' count, summed over the shards, which follows
	// every write within milliseconds. When some shard has no searcher
	// that answers, it is the current snapshot's count (SnapshotDocs),
	// and DocsFrom says so.
	Docs uint64 `json:"docs"`
	// DocsFrom is "searchers" or "snapshot": where Docs comes from.
	DocsFrom string `json:"docs_from"`
	// DocsNote says why Docs is the snapshot's count.
	DocsNote string `json:"docs_note,omitempty"`
	// SnapshotDocs is the current snapshot generation's count: it trails
	// writes made since the snapshot (the indexer publishes one after a
	// bulk ingest and periodically).
	SnapshotDocs uint64 `json:"snapshot_docs"`
	Bytes        int64  `json:"snapshot_bytes"`
}

// Where IndexStatus.Docs comes from.
const (
	DocsFromSearchers = "searchers"
	DocsFromSnapshot  = "snapshot"
)

// Status returns an index's definition, its live document count and its
// current snapshot figures. The count asks one searcher of every shard
// (for at most 2 seconds, or ctx's deadline); see IndexStatus.Docs.
func (c *Client) Status(ctx context.Context, name string) (IndexStatus, error) {
	def, err := c.Index(ctx, name)
	if err != nil {
		return IndexStatus{}, err
	}
	st, err := c.metaStore(ctx)
	if err != nil {
		return IndexStatus{}, err
	}
	m, _, err := st.Manifest(ctx, name)
	if err != nil {
		return IndexStatus{}, err
	}
	out := IndexStatus{IndexDefinition: def, Generation: m.Generation}
	for _, s := range m.Shards {
		out.SnapshotDocs += s.Docs
		out.Bytes += s.Size
	}
	if out.Docs, err = c.liveDocs(ctx, def); err == nil {
		out.DocsFrom = DocsFromSearchers
	} else {
		out.Docs, out.DocsFrom, out.DocsNote = out.SnapshotDocs, DocsFromSnapshot, err.Error()
	}
	return out, nil
}

// DeleteIndex removes an index, its documents and its snapshots.
func (c *Client) DeleteIndex(ctx context.Context, name string) error {
	c.mu.Lock()
	delete(c.defs, name)
	c.mu.Unlock()
	st, err := c.metaStore(ctx)
	if err != nil {
		return err
	}
	return st.DeleteIndex(ctx, name)
}

// definition returns a cached index definition, reading it on a miss:
// the index's of that name, or the one an alias of that name points at
// (its Name says which). A definition is cached only while the client
// follows the indexes and aliases buckets (defsWatch, aliasWatch): what
// changed since is dropped first, so a write is never routed by the
// definition of an index since deleted, nor by an alias since switched.
func (c *Client) definition(ctx context.Context, name string) (api.IndexDefinition, error) {
	c.mu.Lock()
	changed := c.drainDefs()
	def, ok := c.defs[name]
	watching := c.defsWatch != nil
	c.mu.Unlock()
	c.forgetFields(changed)
	if ok && watching {
		return def, nil
	}
	if !watching {
		if err := c.watchDefs(ctx); err != nil {
			return def, err
		}
	}
	st, err := c.metaStore(ctx)
	if err != nil {
		return def, err
	}
	def, err = st.Resolve(ctx, name)
	if err != nil {
		return def, err
	}
	c.mu.Lock()
	if c.defsWatch != nil { // not stopped meanwhile (a closed connection)
		c.defs[name] = def
	}
	c.mu.Unlock()
	return def, nil
}

// watchDefs starts following the indexes and aliases buckets, before
// the definition it is for is read (so that no change between the two is
// missed).
func (c *Client) watchDefs(ctx context.Context) error {
	st, err := c.metaStore(ctx)
	if err != nil {
		return err
	}
	// Not ctx: the watches outlive the call; they end with the connection.
	w, err := st.Indexes.WatchAll(context.Background(), jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("follow the index definitions: %w", err)
	}
	aw, err := st.Aliases.WatchAll(context.Background(), jetstream.UpdatesOnly())
	if err != nil {
		w.Stop()
		return fmt.Errorf("follow the aliases: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.defsWatch != nil { // started meanwhile
		w.Stop()
		aw.Stop()
		return nil
	}
	c.defsWatch, c.aliasWatch = w, aw
	return nil
}

// drainDefs drops the cached definitions defsWatch and aliasWatch say
// changed (an index's, and every alias's that names it; an alias's),
// and returns their names. With a watch ended (the connection closed)
// every definition is dropped and none is cached again. c.mu is held.
func (c *Client) drainDefs() []string {
	var changed []string
	for c.defsWatch != nil {
		var e jetstream.KeyValueEntry
		ok := true
		select {
		case e, ok = <-c.defsWatch.Updates():
			if ok && e != nil {
				for name, def := range c.defs {
					if name == e.Key() || def.Name == e.Key() {
						delete(c.defs, name)
						changed = append(changed, name)
					}
				}
			}
		case e, ok = <-c.aliasWatch.Updates():
			if ok && e != nil {
				delete(c.defs, e.Key())
				changed = append(changed, e.Key())
			}
		default:
			return changed
		}
		if !ok {
			c.defsWatch.Stop()
			c.aliasWatch.Stop()
			c.defsWatch, c.aliasWatch = nil, nil
			for name := range c.defs {
				changed = append(changed, name)
			}
			clear(c.defs)
			return changed
		}
	}
	return changed
}

// forgetFields drops what the client knows of the named indexes' field
// paths (see admitFields).
func (c *Client) forgetFields(names []string) {
	if len(names) == 0 {
		return
	}
	c.fieldsMu.Lock()
	defer c.fieldsMu.Unlock()
	for _, name := range names {
		delete(c.fields, name)
	}
}

// Put upserts one document (a JSON object with a string "id") and returns
// the stream sequence that stores it, once stored.
func (c *Client) Put(ctx context.Context, index string, doc []byte) (uint64, error) {
	msg, err := c.docMsg(ctx, index, doc)
	if err != nil {
		return 0, err
	}
	ack, err := c.js.PublishMsg(ctx, msg)
	if err != nil {
		return 0, c.publishErr(ctx, "publish", err)
	}
	return ack.Sequence, nil
}

// publishErr is the error of a write whose publish failed: the server's
// reason when it holds writes (its disk nearly full: heldErr), else err
// wrapped as what.
func (c *Client) publishErr(ctx context.Context, what string, err error) error {
	if herr := c.heldErr(ctx); herr != nil {
		return herr
	}
	return fmt.Errorf("%s: %w", what, err)
}

// heldErr is a CodeInsufficientStorage error with the server's reason
// when it holds writes to the documents stream (meta.Store.HoldWrites),
// else nil. It asks once, within two seconds of its own: a caller whose
// context ended still learns why.
func (c *Client) heldErr(ctx context.Context) error {
	st, err := c.metaStore(ctx)
	if err != nil {
		return nil
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if reason, err := st.WritesHeld(hctx); err == nil && reason != "" {
		return api.Errorf(api.CodeInsufficientStorage, "not stored: %s", reason)
	}
	return nil
}

// docMsg validates doc, holds it to its index's document limits, and
// makes its stream message.
func (c *Client) docMsg(ctx context.Context, index string, doc []byte) (*nats.Msg, error) {
	def, err := c.definition(ctx, index)
	if err != nil {
		return nil, err
	}
	index = def.Name // an alias names its index
	d, err := api.ParseDocument(doc, c.opts.MaxDocBytes, def.Documents)
	if err != nil {
		return nil, err
	}
	if err := c.admitFields(ctx, def, d, doc); err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subject.Doc(index, subject.ShardOf(d.ID, def.Shards), d.ID), Data: doc}, nil
}

// Delete removes a document by id (a tombstone on the stream) and returns
// the tombstone's sequence. Deleting an id that does not exist succeeds.
func (c *Client) Delete(ctx context.Context, index, id string) (uint64, error) {
	def, err := c.definition(ctx, index)
	if err != nil {
		return 0, err
	}
	index = def.Name // an alias names its index
	if err := api.ValidDocumentID(id); err != nil {
		return 0, err
	}
	msg := &nats.Msg{Subject: subject.Doc(index, subject.ShardOf(id, def.Shards), id), Header: nats.Header{}}
	msg.Header.Set(subject.HeaderOp, subject.OpDelete)
	ack, err := c.js.PublishMsg(ctx, msg)
	if err != nil {
		return 0, c.publishErr(ctx, "publish delete", err)
	}
	return ack.Sequence, nil
}

// SnapshotResult reports a published generation.
type SnapshotResult struct {
	Generation uint64 `json:"generation"`
	Docs       uint64 `json:"docs"`
	Bytes      int64  `json:"bytes"`
}

// Snapshot asks the indexer for a new generation of index that includes
// every update up to stream sequence minSeq, and waits for it.
func (c *Client) Snapshot(ctx context.Context, index string, minSeq uint64) (SnapshotResult, error) {
	def, err := c.definition(ctx, index)
	if err != nil {
		return SnapshotResult{}, err
	}
	index = def.Name // an alias names its index
	b, _ := json.Marshal(map[string]uint64{"min_seq": minSeq})
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
	}
	reply, err := c.nc.RequestWithContext(ctx, subject.Snapshot(index), b)
	if errors.Is(err, nats.ErrNoResponders) {
		return SnapshotResult{}, api.Errorf(api.CodeUnavailable, "no indexer serves index %q", index)
	}
	if err != nil {
		return SnapshotResult{}, fmt.Errorf("snapshot %q: %w", index, err)
	}
	var r struct {
		Manifest meta.Manifest `json:"manifest"`
		Error    string        `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &r); err != nil {
		return SnapshotResult{}, fmt.Errorf("snapshot %q: bad reply: %w", index, err)
	}
	if r.Error != "" {
		return SnapshotResult{}, fmt.Errorf("snapshot %q: %s", index, r.Error)
	}
	out := SnapshotResult{Generation: r.Manifest.Generation}
	for _, s := range r.Manifest.Shards {
		out.Docs += s.Docs
		out.Bytes += s.Size
	}
	return out, nil
}

// Search runs a search request through the brokers.
func (c *Client) Search(ctx context.Context, index string, req *api.SearchRequest) (*api.SearchResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		var e *api.Error // invalid UTF-8: refused, not sent rewritten
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, fmt.Errorf("encode search request: %w", err)
	}
	reply, err := c.SearchRaw(ctx, index, b)
	if err != nil {
		return nil, err
	}
	var resp api.SearchResponse
	if err := json.Unmarshal(reply, &resp); err != nil {
		return nil, fmt.Errorf("decode search response: %w", err)
	}
	return &resp, nil
}

// SearchRaw sends a JSON search request and returns the JSON response, or
// the broker's error as an *api.Error.
func (c *Client) SearchRaw(ctx context.Context, index string, body []byte) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.RequestTimeout)
		defer cancel()
	}
	if err := subject.ValidIndexName(index); err != nil {
		return nil, api.BadRequest("%v", err)
	}
	msg := &nats.Msg{Subject: subject.Search(index), Data: body}
	msg.Header = c.headers(ctx)
	reply, err := c.nc.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		// None runs, or none is ready: a broker takes searches once it
		// holds every index's pipeline (/readyz says so too).
		e := api.Errorf(api.CodeUnavailable, "no broker is serving searches yet (one starts serving once it holds every index's plugin pipeline); try again")
		e.RetryAfterMS = 1000
		return nil, e
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.Canceled):
		// Not an internal error: the caller's deadline (HTTP: 504).
		return nil, api.Errorf(api.CodeTimeout, "search %q: %v", index, err)
	case err != nil:
		return nil, fmt.Errorf("search %q: %w", index, err)
	}
	if reply.Header.Get(micro.ErrorHeader) != "" {
		var e api.Error
		if json.Unmarshal(reply.Data, &e) == nil && e.Code != "" {
			return nil, &e
		}
		code, _ := strconv.Atoi(reply.Header.Get(micro.ErrorCodeHeader))
		return nil, api.Errorf(codeFromStatus(code), "%s", reply.Header.Get(micro.ErrorHeader))
	}
	return reply.Data, nil
}

func codeFromStatus(s int) api.Code {
	switch s {
	case 400:
		return api.CodeBadRequest
	case 404:
		return api.CodeNotFound
	case 403:
		return api.CodeForbidden
	case 409:
		return api.CodeConflict
	case 412:
		return api.CodeGateFailed
	case 202:
		return api.CodeGateRunning
	case 429:
		return api.CodeOverloaded
	case 503:
		return api.CodeUnavailable
	case 504:
		return api.CodeTimeout
	case 507:
		return api.CodeInsufficientStorage
	}
	return api.CodeInternal
}
