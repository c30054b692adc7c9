package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// BulkOptions tunes Bulk. Zero values are documented defaults.
type BulkOptions struct {
	// Window is how many documents may await their acknowledgement at
	// once (default 2048, at most 8192).
	Window int
	// Batch is how many documents go to the stream as one atomic batch,
	// stored and acknowledged together (default and most 1000,
	// nats-server's default cap, and at most Window; 1: every document
	// on its own). A server that syncs every write to disk before
	// acknowledging it (Quarry's default) then syncs once a batch
	// instead of once a document. Used when the stream takes atomic
	// batches (nats-server 2.12 and later); a batch the stream refuses
	// (too many open at once, over a lower cap) is published again a
	// document at a time, and so is the rest of the ingest.
	Batch int
	// MaxErrors is how many line errors are kept in the result (default
	// 100); all of them are counted.
	MaxErrors int
	// NoSnapshot skips asking the indexer for a new generation at the end.
	NoSnapshot bool
	// WaitSearchable makes Bulk return only once a search finds every
	// document it stored (WaitSearchable): the result's Searchable says
	// so.
	WaitSearchable bool
	// Progress, if set, is called every 1,000 documents and at the end with
	// the lines read and the input bytes consumed. Reading runs far ahead
	// of indexing: OnProgress says how many documents are searchable.
	Progress func(lines int, bytes int64)
	// OnProgress, if set, is called every ProgressEvery (default 250ms),
	// from a goroutine of its own, and once more before Bulk returns, with
	// the documents read, stored and indexed (asked of the searchers).
	OnProgress func(BulkProgress)
	// ProgressEvery is how often OnProgress is called.
	ProgressEvery time.Duration
	// Format is the input's: FormatNDJSON (the default; a JSON array of
	// documents is read as such) or FormatES (Elasticsearch's bulk
	// action lines).
	Format string
}

// BulkResult reports a bulk ingest.
type BulkResult struct {
	// Lines is the number of entries read: non-empty lines (NDJSON),
	// elements (a JSON array) or actions (FormatES).
	Lines int `json:"lines"`
	// Stored counts documents acknowledged by the stream.
	Stored int `json:"stored"`
	// Failed counts lines refused (bad JSON, no id, too big) or not stored.
	Failed int `json:"failed"`
	// Errors are the first MaxErrors failures, each naming its line.
	Errors []LineError `json:"errors,omitempty"`
	// LastSeq is the highest stream sequence stored.
	LastSeq uint64 `json:"last_seq"`
	// Snapshot is the generation published at the end.
	Snapshot *SnapshotResult `json:"snapshot,omitempty"`
	// Searchable is set once a search finds every stored document
	// (BulkOptions.WaitSearchable, HTTP ?wait=searchable).
	Searchable bool `json:"searchable,omitempty"`
}

// LineError is a refused line of a bulk input.
type LineError struct {
	Line int    `json:"line"`
	ID   string `json:"id,omitempty"`
	Err  string `json:"error"`
}

func (e LineError) String() string {
	if e.ID != "" {
		return fmt.Sprintf("line %d (id %q): %s", e.Line, e.ID, e.Err)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Err)
}

// Atomic batches (nats-server 2.12+) carry these headers; the last
// message of a batch commits it and gets the one acknowledgement.
const (
	headerBatchID     = "Nats-Batch-Id"
	headerBatchSeq    = "Nats-Batch-Sequence"
	headerBatchCommit = "Nats-Batch-Commit"
	// maxBatch is nats-server's default cap on an atomic batch.
	maxBatch = 1000
	// maxBatchBytes closes a batch early, so that large documents do not
	// hold much more memory than the window does anyway.
	maxBatchBytes = 4 << 20
)

// bulkDoc is one document of a bulk ingest, with where it came from.
type bulkDoc struct {
	line  int
	id    string
	shard int
	msg   *nats.Msg
}

// pendingAck is what awaits one acknowledgement: one document, or an
// atomic batch of them.
type pendingAck struct {
	docs []bulkDoc
	fut  jetstream.PubAckFuture
}

// bulk is one Bulk call's publishing state. Documents go to the stream in
// atomic batches when it allows them, each batch stored (and, on a server
// that syncs every write, fsynced) and acknowledged once; otherwise one
// publish a document. Either way up to Window documents await their
// acknowledgement at once, in order.
type bulk struct {
	c        *Client
	ctx      context.Context
	opts     BulkOptions
	res      *BulkResult
	batching bool
	batch    []bulkDoc // the batch being filled
	bytes    int       // its size
	pending  []pendingAck
	inflight int            // documents in pending
	track    *ingestTracker // nil without BulkOptions.OnProgress
	// heldAsked is when the ingest last asked whether the server holds
	// writes (heldErr), after a refusal: at most once a second, not once
	// a refused document.
	heldAsked time.Time
}

// Bulk reads NDJSON documents from r and upserts them: good lines go in,
// bad lines are counted and reported, and, unless opts.NoSnapshot, a new
// generation including every stored document is published at the end. The
// error is non-nil only when the ingest could not go on (unknown index,
// lost connection, unreadable input); refused lines are in the result.
// A document counts as stored once the stream has acknowledged it: with
// Quarry's default server settings, once it is on disk
// (docs/operations.md, "What an acknowledgement means").
func (c *Client) Bulk(ctx context.Context, index string, r io.Reader, opts BulkOptions) (*BulkResult, error) {
	if opts.Window <= 0 {
		opts.Window = 2048
	}
	opts.Window = min(opts.Window, maxAsyncPending)
	if opts.Batch <= 0 {
		opts.Batch = maxBatch
	}
	opts.Batch = min(opts.Batch, maxBatch, opts.Window)
	if opts.MaxErrors <= 0 {
		opts.MaxErrors = 100
	}
	def, err := c.definition(ctx, index)
	if err != nil {
		return nil, err
	}
	index = def.Name // an alias names its index
	b := &bulk{c: c, ctx: ctx, opts: opts, res: &BulkResult{}, batching: opts.Batch > 1 && c.atomicBatches(ctx)}
	if opts.OnProgress != nil {
		if opts.ProgressEvery <= 0 {
			opts.ProgressEvery = 250 * time.Millisecond
		}
		b.track = c.trackIngest(def, opts.OnProgress, opts.ProgressEvery)
		defer b.track.stop()
	}
	res := b.res
	in, err := newBulkInput(r, opts.Format, c.opts.MaxDocBytes)
	if err != nil {
		return res, err
	}
	for {
		it, ok, err := in.next()
		if err != nil {
			return res, err
		}
		if !ok {
			b.track.read(res.Lines, in.consumed(), true)
			break
		}
		res.Lines++
		if msg, merr := c.itemMsg(ctx, def, index, it); merr != nil {
			b.fail(it.line, it.del, merr)
		} else {
			_, shard, id, _ := subject.ParseDoc(msg.Subject)
			if perr := b.add(bulkDoc{line: it.line, id: id, shard: shard, msg: msg}); perr != nil {
				return res, perr
			}
		}
		if opts.Progress != nil && res.Lines%1000 == 0 {
			opts.Progress(res.Lines, in.consumed())
		}
		b.track.read(res.Lines, in.consumed(), false)
	}
	if err := b.flush(); err != nil {
		return res, err
	}
	for len(b.pending) > 0 {
		if err := b.settleOldest(); err != nil {
			return res, err
		}
	}
	if opts.Progress != nil {
		opts.Progress(res.Lines, in.consumed())
	}
	b.track.allStored(ctx)
	if opts.WaitSearchable && res.Stored > 0 {
		if err := c.WaitSearchable(ctx, index, res.LastSeq); err != nil {
			return res, err
		}
		res.Searchable = true
	}
	if opts.NoSnapshot || res.Stored == 0 {
		return res, nil
	}
	b.track.publishing(true)
	snap, err := c.Snapshot(ctx, index, res.LastSeq)
	b.track.publishing(false)
	if err != nil {
		return res, err
	}
	res.Snapshot = &snap
	return res, nil
}

// itemMsg makes an input entry's stream message: a document's, checked
// (docMsg), or an ES delete's tombstone.
func (c *Client) itemMsg(ctx context.Context, def api.IndexDefinition, index string, it bulkItem) (*nats.Msg, error) {
	switch {
	case it.err != nil:
		return nil, it.err
	case it.del != "":
		if err := api.ValidDocumentID(it.del); err != nil {
			return nil, err
		}
		msg := &nats.Msg{Subject: subject.Doc(index, subject.ShardOf(it.del, def.Shards), it.del), Header: nats.Header{}}
		msg.Header.Set(subject.HeaderOp, subject.OpDelete)
		return msg, nil
	}
	return c.docMsg(ctx, index, it.doc)
}

// atomicBatches reports whether the document stream takes atomic batches.
func (c *Client) atomicBatches(ctx context.Context) bool {
	st, err := c.metaStore(ctx)
	if err != nil || st.Docs == nil {
		return false
	}
	info := st.Docs.CachedInfo()
	return info != nil && info.Config.AllowAtomicPublish
}

func (b *bulk) fail(line int, id string, err error) {
	b.track.failed()
	b.res.Failed++
	if len(b.res.Errors) < b.opts.MaxErrors {
		b.res.Errors = append(b.res.Errors, LineError{Line: line, ID: id, Err: err.Error()})
	}
}

// add takes the next document: into the batch, or published on its own.
func (b *bulk) add(d bulkDoc) error {
	if !b.batching {
		return b.publish([]bulkDoc{d})
	}
	b.batch = append(b.batch, d)
	b.bytes += len(d.msg.Data)
	if len(b.batch) >= b.opts.Batch || b.bytes >= maxBatchBytes {
		return b.flush()
	}
	return nil
}

// flush publishes the batch being filled.
func (b *bulk) flush() error {
	docs := b.batch
	b.batch, b.bytes = nil, 0
	if len(docs) == 0 {
		return nil
	}
	return b.publish(docs)
}

// publish sends docs, one document or an atomic batch, once the window
// has room for them.
func (b *bulk) publish(docs []bulkDoc) error {
	for len(b.pending) > 0 && b.inflight+len(docs) > b.opts.Window {
		// Settle the older half of the window before publishing more.
		for settled := 0; len(b.pending) > 0 && settled < max(b.opts.Window/2, 1); {
			settled += len(b.pending[0].docs)
			if err := b.settleOldest(); err != nil {
				return err
			}
		}
	}
	if len(docs) > 1 && !b.batching {
		// Batching stopped while this batch waited for room.
		for _, d := range docs {
			if err := b.publish([]bulkDoc{d}); err != nil {
				return err
			}
		}
		return nil
	}
	fut, err := b.send(docs)
	if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
		// The connection is backed up: wait for every pending ack, then
		// try once more.
		for len(b.pending) > 0 {
			if serr := b.settleOldest(); serr != nil {
				return serr
			}
		}
		fut, err = b.send(docs)
	}
	if err != nil {
		return b.c.publishErr(b.ctx, fmt.Sprintf("line %d: publish", docs[0].line), err)
	}
	b.pending = append(b.pending, pendingAck{docs: docs, fut: fut})
	b.inflight += len(docs)
	return nil
}

// send publishes one document, or docs as an atomic batch: every message
// but the last without a reply, the last committing the batch.
func (b *bulk) send(docs []bulkDoc) (jetstream.PubAckFuture, error) {
	if len(docs) == 1 {
		return b.c.js.PublishMsgAsync(docs[0].msg)
	}
	id := nuid.Next()
	msg := func(i int) *nats.Msg {
		m := &nats.Msg{Subject: docs[i].msg.Subject, Data: docs[i].msg.Data, Header: nats.Header{}}
		for k, v := range docs[i].msg.Header { // a tombstone's op
			m.Header[k] = v
		}
		m.Header.Set(headerBatchID, id)
		m.Header.Set(headerBatchSeq, strconv.Itoa(i+1))
		return m
	}
	last := len(docs) - 1
	for i := range last {
		if err := b.c.nc.PublishMsg(msg(i)); err != nil {
			return nil, err
		}
	}
	commit := msg(last)
	commit.Header.Set(headerBatchCommit, "1")
	return b.c.js.PublishMsgAsync(commit)
}

// wait waits for p's acknowledgement. A refusal is perr; err is the
// context's end, which stops the ingest.
func (b *bulk) wait(p pendingAck) (ack *jetstream.PubAck, perr, err error) {
	select {
	case ack := <-p.fut.Ok():
		return ack, nil, nil
	case perr := <-p.fut.Err():
		if errors.Is(perr, context.Canceled) || b.ctx.Err() != nil {
			return nil, nil, b.ctx.Err()
		}
		return nil, perr, nil
	case <-b.ctx.Done():
		return nil, nil, b.ctx.Err()
	}
}

// settleOldest waits for the oldest pending acknowledgement and counts it.
func (b *bulk) settleOldest() error {
	p := b.pending[0]
	b.pending = b.pending[1:]
	b.inflight -= len(p.docs)
	ack, perr, err := b.wait(p)
	if perr != nil && time.Since(b.heldAsked) >= time.Second {
		// A server that holds writes (its disk nearly full) refuses
		// every one: the ingest stops, with why. Asked at most once a
		// second: a million refused lines are not a million requests.
		b.heldAsked = time.Now()
		if herr := b.c.heldErr(b.ctx); herr != nil {
			return fmt.Errorf("line %d: %w", p.docs[0].line, herr)
		}
	}
	switch {
	case err != nil:
		return err
	case perr == nil:
		b.stored(p, ack)
	case len(p.docs) == 1:
		b.fail(p.docs[0].line, p.docs[0].id, fmt.Errorf("not stored: %w", perr))
	default:
		return b.fallback(p)
	}
	return nil
}

func (b *bulk) stored(p pendingAck, ack *jetstream.PubAck) {
	b.res.Stored += len(p.docs)
	b.res.LastSeq = max(b.res.LastSeq, ack.Sequence)
	for i, d := range p.docs {
		// An atomic batch is stored as one run of sequences, the
		// acknowledgement's the last.
		b.track.stored(d.shard, ack.Sequence-uint64(len(p.docs)-1-i))
	}
}

// fallback handles a refused batch (none of its documents is stored: too
// many batches in flight on the stream, or a stream that stopped taking
// them): the rest of the ingest publishes one document at a time. Every
// later publish is settled first, then the refused batches' documents are
// published again, in order, except those that a later line of the same
// id, already stored, supersedes (they count as stored: publishing them
// again would overwrite the newer version).
func (b *bulk) fallback(failed pendingAck) error {
	b.batching = false
	later := b.pending
	b.pending, b.inflight = nil, 0
	refused := []bool{true}
	all := []pendingAck{failed}
	for _, p := range later {
		ack, perr, err := b.wait(p)
		if err != nil {
			return err
		}
		all = append(all, p)
		switch {
		case perr == nil:
			b.stored(p, ack)
			refused = append(refused, false)
		case len(p.docs) == 1:
			b.fail(p.docs[0].line, p.docs[0].id, fmt.Errorf("not stored: %w", perr))
			refused = append(refused, false)
		default:
			refused = append(refused, true)
		}
	}
	// Stored after each refused batch: the ids that supersede its lines.
	retry := make([][]bulkDoc, len(all))
	newer := map[string]bool{}
	for i := len(all) - 1; i >= 0; i-- {
		if !refused[i] {
			for _, d := range all[i].docs {
				newer[d.id] = true
			}
			continue
		}
		for _, d := range all[i].docs {
			if newer[d.id] {
				b.res.Stored++
				b.track.superseded()
			} else {
				retry[i] = append(retry[i], d)
			}
		}
	}
	for _, docs := range retry {
		for _, d := range docs {
			if err := b.publish([]bulkDoc{d}); err != nil {
				return err
			}
		}
	}
	return nil
}

// readLine reads one line (without its newline). A line longer than max
// is consumed and reported as tooLong with no content. n is the bytes
// consumed including the newline.
func readLine(br *bufio.Reader, max int) (line []byte, n int, tooLong bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		n += len(chunk)
		if !tooLong {
			if len(line)+len(chunk) > max+2 { // +2: a "\r\n" line ending
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			return nil, n, true, rerr
		}
		return bytes.TrimRight(line, "\r\n"), n, false, rerr
	}
}
