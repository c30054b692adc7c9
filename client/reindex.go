package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/subject"
)

// ReindexOptions tunes Reindex. Zero values are documented defaults.
type ReindexOptions struct {
	// Shards is the new index's shard count (default: the source's),
	// when Reindex creates it.
	Shards int
	// Mapping is the new index's bleve mapping (default: the source's),
	// when Reindex creates it.
	Mapping []byte
	// Alias, if set, names an alias that points at the source: once the
	// new index has every document, is searchable and has refused none,
	// Reindex switches it to the new index. Without it, Reindex copies
	// until some alias is switched from the source to the new index
	// (quarry alias switch), or ctx ends.
	Alias string
	// Grace is how long Reindex goes on copying writes that reach the
	// source after the switch (from a writer that had not heard of it
	// yet): default 5 s.
	Grace time.Duration
	// NoPipeline leaves the new index's pipeline as it is. By default
	// Reindex gives it the source's live pipeline before copying: each
	// step's live version pushed to the new index (validated there) with
	// its settings, canaries and shadows left behind, so searches through
	// the alias run the same plugins after the switch.
	NoPipeline bool
	// Chunk is how many source messages are copied between two records
	// of the position a resumed reindex starts from (default 5,000).
	Chunk int
	// OnProgress, if set, is called after every chunk of documents
	// copied, and while Reindex waits.
	OnProgress func(ReindexProgress)
}

// ReindexProgress is where a reindex stands.
type ReindexProgress struct {
	// Copied counts documents written to the new index; Deleted,
	// tombstones; Skipped, writes to the source after the switch older
	// than the new index's version of their document.
	Copied, Deleted, Skipped uint64
	// Pending counts the source's messages not copied yet.
	Pending uint64
	// CaughtUp is set once every message the source held is copied
	// (new writes are copied as they come).
	CaughtUp bool
	// Switched is set once the alias points at the new index.
	Switched bool
}

// ReindexResult reports a finished reindex.
type ReindexResult struct {
	ReindexProgress
	// Refused are the documents the new index refused (its document
	// limits at the door, its mapping when the indexer applied them), the
	// first maxRefusedKept of RefusedCount: the alias is not switched
	// while there is one.
	Refused      []api.RejectedDocument `json:"refused,omitempty"`
	RefusedCount int                    `json:"refused_count,omitempty"`
	// LastSeq is the highest stream sequence written to the new index.
	LastSeq uint64 `json:"last_seq"`
	// Took is how long the copy took until the switch (or until it was
	// caught up, without one).
	Took time.Duration `json:"took_ns"`
}

// maxRefusedKept bounds ReindexResult.Refused.
const maxRefusedKept = 1000

// ErrReindexRefused is the error of a reindex whose new index refused
// documents: ReindexResult.Refused names them, and the alias was not
// switched.
var ErrReindexRefused = errors.New("the new index refused documents")

// reindexChunk is ReindexOptions.Chunk's default.
const reindexChunk = 5000

// Reindex builds the index dst from the documents of the index src, as
// the stream holds them (the latest version of each), and keeps copying
// writes to src until the switch (ReindexOptions.Alias). dst is created
// with src's definition unless it exists (its shards and mapping from
// opts); it must be of src's team. The copy is resumable: its position
// is a durable consumer of the documents stream, and Reindex of the
// same src and dst after a crash goes on from where it stopped (dst
// deleted meanwhile: from the start). Writes reach dst as they reached
// src, in the stream's order; after the switch, a write to src is
// copied only if dst holds no newer version of its document (the
// stream's sequence decides).
func (c *Client) Reindex(ctx context.Context, src, dst string, opts ReindexOptions) (*ReindexResult, error) {
	if opts.Grace <= 0 {
		opts.Grace = 5 * time.Second
	}
	if opts.Chunk <= 0 {
		opts.Chunk = reindexChunk
	}
	srcDef, err := c.Index(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("reindex: %w", err)
	}
	if src == dst {
		return nil, api.BadRequest("reindex: the source and the new index are both %q", src)
	}
	if opts.Alias != "" {
		a, err := c.Alias(ctx, opts.Alias)
		if err != nil {
			return nil, fmt.Errorf("reindex: %w", err)
		}
		if a.Index != src {
			return nil, api.BadRequest("reindex: alias %q points at %q, not at %q: the alias switched must be the source's", a.Name, a.Index, src)
		}
	}
	st, err := c.metaStore(ctx)
	if err != nil {
		return nil, err
	}
	durable := "quarry-reindex-" + src + "-" + dst
	dstDef, err := c.Index(ctx, dst)
	switch {
	case api.CodeOf(err) == api.CodeNotFound:
		// A consumer left by a reindex into a dst since deleted is no
		// position to resume from.
		if derr := c.js.DeleteConsumer(ctx, subject.DocsStream, durable); derr != nil && !errors.Is(derr, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("reindex: remove the old position: %w", derr)
		}
		def := srcDef
		def.Name, def.Created = dst, time.Time{}
		if opts.Shards > 0 {
			def.Shards = opts.Shards
		}
		if opts.Mapping != nil {
			def.Mapping = opts.Mapping
		}
		if dstDef, err = c.CreateIndexDef(ctx, def); err != nil {
			return nil, fmt.Errorf("reindex: create %q: %w", dst, err)
		}
	case err != nil:
		return nil, fmt.Errorf("reindex: %w", err)
	case dstDef.Team != srcDef.Team:
		return nil, api.Errorf(api.CodeForbidden, "reindex: %q is team %s's and %q team %s's: a reindex stays within a team", src, srcDef.TeamOf(), dst, dstDef.TeamOf())
	}
	cons, err := c.js.CreateOrUpdateConsumer(ctx, subject.DocsStream, jetstream.ConsumerConfig{
		Durable: durable, Description: fmt.Sprintf("Quarry reindex of %s into %s: its position", src, dst),
		FilterSubject: subject.DocsOfIndex(src), DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy: jetstream.AckAllPolicy, MaxAckPending: 2 * max(opts.Chunk, maxBatch), AckWait: time.Minute,
		InactiveThreshold: 24 * time.Hour, // an abandoned reindex's position goes after a day
	})
	if err != nil {
		return nil, fmt.Errorf("reindex: position: %w", err)
	}
	if !opts.NoPipeline {
		if err := c.copyPipeline(ctx, st, src, dst); err != nil {
			return nil, fmt.Errorf("reindex: the pipeline of %q: %w", src, err)
		}
	}
	r := &reindex{c: c, ctx: ctx, opts: opts, dst: dstDef, cons: cons, st: st.Docs, res: &ReindexResult{}, start: time.Now()}
	r.b = &bulk{c: c, ctx: ctx, opts: BulkOptions{Window: 2048, Batch: maxBatch, MaxErrors: 1000}, res: &BulkResult{}, batching: c.atomicBatches(ctx)}
	if err := r.run(src); err != nil {
		return r.result(), err
	}
	if err := c.js.DeleteConsumer(context.WithoutCancel(ctx), subject.DocsStream, durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return r.result(), fmt.Errorf("reindex: remove its position: %w", err)
	}
	return r.result(), nil
}

// reindex is one Reindex call's state.
type reindex struct {
	c     *Client
	ctx   context.Context
	opts  ReindexOptions
	dst   api.IndexDefinition
	cons  jetstream.Consumer
	st    jetstream.Stream
	b     *bulk // what publishes the copies
	res   *ReindexResult
	start time.Time
	// switchedAt is when the alias was seen pointing at dst.
	switchedAt time.Time
}

// run copies in chunks until the switch's grace has passed.
func (r *reindex) run(src string) error {
	for {
		caughtUp, err := r.chunk()
		if err != nil {
			return err
		}
		r.res.CaughtUp = r.res.CaughtUp || caughtUp
		if caughtUp && !r.res.Switched {
			if err := r.maybeSwitch(src); err != nil {
				return err
			}
		}
		r.progress()
		if r.res.Switched && caughtUp && time.Since(r.switchedAt) >= r.opts.Grace {
			return nil
		}
	}
}

// chunk copies up to ReindexOptions.Chunk messages, publishes them, and then
// acknowledges the last to the source consumer (so a resumed reindex
// starts after it). It reports whether the source has no more.
func (r *reindex) chunk() (caughtUp bool, err error) {
	var last jetstream.Msg
	for n := 0; n < r.opts.Chunk; {
		wait := 250 * time.Millisecond
		batch, err := r.cons.Fetch(min(maxBatch, r.opts.Chunk-n), jetstream.FetchMaxWait(wait))
		if err != nil {
			return false, fmt.Errorf("reindex: read the source: %w", err)
		}
		got := 0
		pending := uint64(0)
		for m := range batch.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil {
				return false, fmt.Errorf("reindex: %w", err)
			}
			pending = md.NumPending
			if err := r.copy(m, md.Sequence.Stream); err != nil {
				return false, err
			}
			last = m
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			if r.ctx.Err() != nil {
				return false, r.ctx.Err()
			}
			return false, fmt.Errorf("reindex: read the source: %w", err)
		}
		n += got
		if got == 0 {
			// A fetch that timed out says nothing of the source (a busy
			// server can be slow to deliver): its consumer does.
			info, err := r.cons.Info(r.ctx)
			if err != nil {
				return false, fmt.Errorf("reindex: read the position: %w", err)
			}
			pending = info.NumPending
		}
		r.res.Pending = pending
		if pending == 0 {
			caughtUp = true
			break
		}
		if got == 0 {
			break // the chunk so far is published; the loop fetches again
		}
	}
	if err := r.b.flush(); err != nil {
		return false, err
	}
	for len(r.b.pending) > 0 {
		if err := r.b.settleOldest(); err != nil {
			return false, err
		}
	}
	r.res.LastSeq = max(r.res.LastSeq, r.b.res.LastSeq)
	if last != nil {
		if err := last.DoubleAck(r.ctx); err != nil {
			return false, fmt.Errorf("reindex: record the position: %w", err)
		}
	}
	return caughtUp, nil
}

// copy publishes one source message's copy: the document, checked
// against dst's limits, or a tombstone; marked with the source sequence
// (subject.HeaderReindexFrom). After the switch, only if dst's version of
// the document is older.
func (r *reindex) copy(m jetstream.Msg, seq uint64) error {
	_, _, id, err := subject.ParseDoc(m.Subject())
	if err != nil {
		return nil // not a document's subject: nothing a search could see
	}
	if m.Headers().Get(subject.HeaderOp) == subject.OpMapping {
		return nil // the source's mapping changing: dst has its own
	}
	var msg *nats.Msg
	if m.Headers().Get(subject.HeaderOp) == subject.OpDelete {
		msg = &nats.Msg{Subject: subject.Doc(r.dst.Name, subject.ShardOf(id, r.dst.Shards), id), Header: nats.Header{}}
		msg.Header.Set(subject.HeaderOp, subject.OpDelete)
	} else if msg, err = r.c.docMsg(r.ctx, r.dst.Name, m.Data()); err != nil {
		r.refuse(api.RejectedDocument{Index: r.dst.Name, ID: id, Seq: seq, Reason: err.Error()})
		return nil
	} else {
		msg.Header = nats.Header{}
	}
	msg.Header.Set(subject.HeaderReindexFrom, strconv.FormatUint(seq, 10))
	if r.res.Switched {
		newer, err := r.dstNewer(msg.Subject, seq)
		if err != nil {
			return err
		}
		if newer {
			r.res.Skipped++
			return nil
		}
	}
	if msg.Header.Get(subject.HeaderOp) == subject.OpDelete {
		r.res.Deleted++
	} else {
		r.res.Copied++
	}
	_, shard, _, _ := subject.ParseDoc(msg.Subject)
	return r.b.add(bulkDoc{line: int(seq), id: id, shard: shard, msg: msg})
}

// dstNewer reports whether dst holds a version of the document on subj
// newer than the source's at seq: written to dst itself after seq, or
// copied from a later source sequence.
func (r *reindex) dstNewer(subj string, seq uint64) (bool, error) {
	have, err := r.st.GetLastMsgForSubject(r.ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reindex: read the new index's version: %w", err)
	}
	at := have.Sequence
	if from, err := strconv.ParseUint(have.Header.Get(subject.HeaderReindexFrom), 10, 64); err == nil {
		at = from
	}
	return at > seq, nil
}

// maybeSwitch, once caught up, switches the alias (ReindexOptions.Alias)
// when the new index is searchable and refused nothing; without one, it
// notes a switch made by someone else (an alias that pointed at src now
// points at dst).
func (r *reindex) maybeSwitch(src string) error {
	if r.opts.Alias == "" {
		as, err := r.c.Aliases(r.ctx)
		if err != nil {
			return err
		}
		toDst, toSrc := false, false
		for _, a := range as {
			toDst = toDst || a.Index == r.dst.Name
			toSrc = toSrc || a.Index == src
		}
		if toDst && !toSrc {
			r.switched()
		}
		return nil
	}
	if r.res.LastSeq > 0 {
		if err := r.c.WaitSearchable(r.ctx, r.dst.Name, r.res.LastSeq); err != nil {
			return fmt.Errorf("reindex: wait until %q is searchable: %w", r.dst.Name, err)
		}
		// The indexer has applied every copy too (and recorded what
		// the mapping refused), and new searchers start from here.
		if _, err := r.c.Snapshot(r.ctx, r.dst.Name, r.res.LastSeq); err != nil {
			return fmt.Errorf("reindex: snapshot %q: %w", r.dst.Name, err)
		}
	}
	rejected, err := r.c.RejectedDocuments(r.ctx, r.dst.Name, 0)
	if err != nil {
		return fmt.Errorf("reindex: the documents %q refused: %w", r.dst.Name, err)
	}
	r.publishRefusals()
	for _, d := range rejected {
		r.refuse(d)
	}
	if r.res.RefusedCount > 0 {
		ids := make([]string, 0, 5)
		for _, d := range r.res.Refused[:min(5, len(r.res.Refused))] {
			ids = append(ids, fmt.Sprintf("%s (%s)", d.ID, d.Reason))
		}
		return fmt.Errorf("%w: %d, alias %q not switched: %s", ErrReindexRefused, r.res.RefusedCount, r.opts.Alias, strings.Join(ids, "; "))
	}
	r.res.Took = time.Since(r.start)
	if _, err := r.c.SwitchAlias(r.ctx, r.opts.Alias, r.dst.Name); err != nil {
		return fmt.Errorf("reindex: switch alias %q: %w", r.opts.Alias, err)
	}
	r.switched()
	return nil
}

// refuse records a document the new index refused.
func (r *reindex) refuse(d api.RejectedDocument) {
	r.res.RefusedCount++
	if len(r.res.Refused) < maxRefusedKept {
		r.res.Refused = append(r.res.Refused, d)
	}
}

func (r *reindex) switched() {
	r.res.Switched, r.switchedAt = true, time.Now()
	if r.res.Took == 0 {
		r.res.Took = time.Since(r.start)
	}
}

func (r *reindex) progress() {
	if r.opts.OnProgress != nil {
		r.opts.OnProgress(r.res.ReindexProgress)
	}
}

// publishRefusals moves the publisher's refusals (a copy the stream did
// not store) among the refused.
func (r *reindex) publishRefusals() {
	for _, e := range r.b.res.Errors {
		r.refuse(api.RejectedDocument{Index: r.dst.Name, ID: e.ID, Seq: uint64(e.Line), Reason: e.Err})
	}
	r.res.RefusedCount += r.b.res.Failed - len(r.b.res.Errors) // those it did not keep
	r.b.res.Errors, r.b.res.Failed = nil, 0
}

// result is the result so far.
func (r *reindex) result() *ReindexResult {
	r.publishRefusals()
	if r.res.Took == 0 {
		r.res.Took = time.Since(r.start)
	}
	return r.res
}

// copyPipeline gives dst src's live pipeline: each step's live version
// pushed to dst (validated there) with the step's settings, then the
// pipeline set; canaries and shadows stay behind. Nothing is done for a
// source without steps.
func (c *Client) copyPipeline(ctx context.Context, st *meta.Store, src, dst string) error {
	spec, err := c.Pipeline(ctx, src)
	if err != nil {
		return err
	}
	if len(spec.Rewriters)+len(spec.Rankers) == 0 {
		return nil
	}
	out := &api.PipelineSpec{Index: dst}
	for _, stage := range []struct {
		kind  string
		steps []api.StepSpec
		dst   *[]api.StepSpec
	}{{"rewriter", spec.Rewriters, &out.Rewriters}, {"ranker", spec.Rankers, &out.Rankers}} {
		for _, step := range stage.steps {
			step.Canary, step.Shadow = nil, nil
			wasm, err := st.PluginBinary(ctx, step.Digest)
			if err != nil {
				return fmt.Errorf("%s %s: %w", stage.kind, step.Plugin, err)
			}
			if _, err := c.PushPlugin(ctx, dst, step.Plugin, wasm, PushOptions{Kind: stage.kind, Step: step}); err != nil {
				return fmt.Errorf("push %s %s to %q: %w", stage.kind, step.Plugin, dst, err)
			}
			*stage.dst = append(*stage.dst, step)
		}
	}
	_, err = c.SetPipeline(ctx, dst, out)
	return err
}
