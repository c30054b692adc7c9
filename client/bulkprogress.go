package client

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/backoff"
)

// BulkProgress is how far a bulk ingest has got (BulkOptions.OnProgress).
// Reading and storing run far ahead of indexing (the stream acknowledges
// tens of thousands of documents a second, an index takes thousands), so
// Indexed is the figure that says when the documents are searchable and
// what the rate is.
type BulkProgress struct {
	// Elapsed is the time since the ingest started.
	Elapsed time.Duration
	// Lines and Bytes are the non-empty lines and input bytes read;
	// ReadAll is set once the whole input is read.
	Lines   int
	Bytes   int64
	ReadAll bool
	// Stored counts documents the stream acknowledged, Failed lines
	// refused or not stored.
	Stored, Failed int
	// Indexed counts stored documents the searchers have applied, so
	// searchable: exact for a shard once its searcher is past the shard's
	// last stored document, interpolated by stream sequence before, none
	// on a shard no searcher has answered for yet. The admin service
	// (beside each broker) asks the searchers (documents.applied). -1
	// while no searcher has answered for any shard, or no admin service
	// runs: indexing cannot be followed.
	Indexed int
	// Publishing is set while Bulk waits for the indexer to publish the
	// snapshot generation holding every stored document.
	Publishing bool
}

// progressTimeout bounds one poll of the searchers.
const progressTimeout = time.Second

// ingestTracker follows one Bulk call and reports it every so often: what
// was read and stored (from Bulk), what the searchers have applied (polled
// on each shard's queue group). Its methods do nothing on a nil tracker.
type ingestTracker struct {
	c      *Client
	def    api.IndexDefinition
	on     func(BulkProgress)
	start  time.Time
	stopCh chan struct{}
	done   chan struct{}

	mu             sync.Mutex
	p              BulkProgress
	shards         []shardProgress
	supersededDocs int // stored documents on no shard (see superseded)
	reported       int // the last Indexed reported
}

// shardProgress is one shard's part of an ingest.
type shardProgress struct {
	stored      int    // this ingest's documents stored on the shard
	first, last uint64 // the lowest and highest of their stream sequences
	applied     uint64 // the sequence its searcher has applied
	served      bool   // a searcher has answered for the shard
}

// trackIngest starts reporting to on every every, until stop.
func (c *Client) trackIngest(def api.IndexDefinition, on func(BulkProgress), every time.Duration) *ingestTracker {
	t := &ingestTracker{c: c, def: def, on: on, start: time.Now(), stopCh: make(chan struct{}), done: make(chan struct{}),
		shards: make([]shardProgress, def.Shards)}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-t.stopCh:
				return
			case <-tick.C:
				t.poll()
				t.report()
			}
		}
	}()
	return t
}

// read records the input read so far.
func (t *ingestTracker) read(lines int, bytes int64, all bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.p.Lines, t.p.Bytes, t.p.ReadAll = lines, bytes, all
	t.mu.Unlock()
}

// stored records a document the stream acknowledged, on shard at
// stream sequence seq.
func (t *ingestTracker) stored(shard int, seq uint64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &t.shards[shard]
	if s.stored == 0 || seq < s.first {
		s.first = seq
	}
	s.last = max(s.last, seq)
	s.stored++
	t.p.Stored++
}

// failed records a refused line or document.
func (t *ingestTracker) failed() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.p.Failed++
	t.mu.Unlock()
}

// publishing records that Bulk waits for the snapshot.
func (t *ingestTracker) publishing(on bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.p.Publishing = on
	t.mu.Unlock()
}

// allStored makes each shard's end exact once every document is stored:
// the shard's last stored sequence, as the stream has it.
func (t *ingestTracker) allStored(ctx context.Context) {
	if t == nil {
		return
	}
	st, err := t.c.metaStore(ctx)
	if err != nil {
		return
	}
	for sh := range t.shards {
		t.mu.Lock()
		empty := t.shards[sh].stored == 0
		t.mu.Unlock()
		if empty {
			continue
		}
		last, err := st.ShardLastSeq(ctx, t.def.Name, sh)
		if err != nil {
			continue
		}
		t.mu.Lock()
		t.shards[sh].last = max(t.shards[sh].last, last)
		t.mu.Unlock()
	}
}

// superseded records a document counted as stored because a later line
// of the same id was (Bulk's fallback from refused batches).
func (t *ingestTracker) superseded() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.p.Stored++
	t.supersededDocs++
	t.mu.Unlock()
}

// stop ends the reports with a last, fresh one.
func (t *ingestTracker) stop() {
	close(t.stopCh)
	<-t.done
	t.poll()
	t.report()
}

// poll asks, through the admin service, which stream sequence one
// searcher of each shard has applied.
func (t *ingestTracker) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), progressTimeout)
	defer cancel()
	applied, err := t.c.applied(ctx, t.def.Name)
	if err != nil {
		return // keep what is known: the admin service may be busy
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range applied.Shards {
		if !a.Served || a.Shard < 0 || a.Shard >= len(t.shards) {
			continue // keep what is known: a busy searcher may not answer in time
		}
		s := &t.shards[a.Shard]
		s.served = true
		s.applied = max(s.applied, a.Seq) // replicas may differ: never go back
	}
}

// report calls on with the progress as it stands.
func (t *ingestTracker) report() {
	t.mu.Lock()
	p := t.p
	p.Elapsed = time.Since(t.start)
	// A shard no searcher has answered for yet (none serves it, or it is
	// still loading) has nothing searchable.
	p.Indexed = 0
	all, seen := true, false
	for _, s := range t.shards {
		n := 0
		if s.served {
			n, seen = s.indexed(), true
		}
		p.Indexed += n
		all = all && n == s.stored
	}
	if all {
		// Superseded documents are searchable in their newer version.
		p.Indexed += t.supersededDocs
	}
	// An estimate shifts as documents are stored: never report fewer
	// than before.
	p.Indexed = max(p.Indexed, t.reported)
	t.reported = p.Indexed
	if !seen {
		p.Indexed = -1 // no searcher: nothing to follow
	}
	t.mu.Unlock()
	t.on(p)
}

// indexed is how many of the shard's stored documents its searcher has
// applied: all of them once it is past the last; before that, the share
// of the shard's sequence range it has covered (ids spread evenly over
// the shards, so over that range), never all.
func (s *shardProgress) indexed() int {
	switch {
	case s.stored == 0 || s.applied < s.first:
		return 0
	case s.applied >= s.last:
		return s.stored
	}
	n := int(float64(s.stored) * float64(s.applied-s.first+1) / float64(s.last-s.first+1))
	return min(n, s.stored-1)
}

// applied asks the admin service which stream sequence one searcher of
// each shard of index has applied (documents.applied).
func (c *Client) applied(ctx context.Context, index string) (*api.ShardsApplied, error) {
	var out api.ShardsApplied
	if err := c.admin(ctx, index, "documents.applied", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DefaultSearchableWait is Options.SearchableWait's default.
const DefaultSearchableWait = time.Minute

// WaitSearchable waits until a search of index finds every write stored up
// to stream sequence seq (what Put and Delete return, a BulkResult's
// LastSeq): until each shard's searcher has applied the shard's last
// document at or before seq. It is Elasticsearch's refresh=wait_for:
// ?wait=searchable over HTTP, --wait in the CLI. With several searcher
// replicas of a shard it asks one of them each time: a search answered
// by another may, for a moment, not see the write yet. The error on ctx's
// end says which shards were behind. With no deadline in ctx it waits at
// most Options.SearchableWait: a searcher that never catches up (stopped,
// its disk full) does not hold the caller (the HTTP door's
// ?wait=searchable) for ever.
func (c *Client) WaitSearchable(ctx context.Context, index string, seq uint64) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cmp.Or(c.opts.SearchableWait, DefaultSearchableWait))
		defer cancel()
	}
	def, err := c.definition(ctx, index)
	if err != nil {
		return err
	}
	index = def.Name // an alias names its index
	st, err := c.metaStore(ctx)
	if err != nil {
		return err
	}
	// What each shard must reach: its last document if that is at or
	// before seq, else seq itself (a shard sees only its own documents'
	// sequences, in order: once it is at seq or past, it has applied
	// every one of them stored before).
	want := make([]uint64, def.Shards)
	for sh := range def.Shards {
		last, err := st.ShardLastSeq(ctx, index, sh)
		if err != nil {
			return err
		}
		want[sh] = min(seq, last) // 0: nothing stored on the shard
	}
	pause := backoff.New(5*time.Millisecond, 100*time.Millisecond)
	for {
		got := make([]uint64, len(want))
		pctx, cancel := context.WithTimeout(ctx, progressTimeout)
		applied, err := c.applied(pctx, index)
		cancel()
		if err == nil {
			for _, a := range applied.Shards {
				if a.Served && a.Shard >= 0 && a.Shard < len(got) {
					got[a.Shard] = a.Seq
				}
			}
		}
		behind := ""
		for sh, w := range want {
			if w == 0 {
				continue
			}
			if got[sh] >= w {
				want[sh] = 0
				continue
			}
			behind += fmt.Sprintf(" shard %d at %d of %d;", sh, got[sh], w)
		}
		if behind == "" {
			return nil
		}
		if pause.Wait(ctx) != nil {
			return api.Errorf(api.CodeTimeout, "index %q was not searchable up to sequence %d in time:%s (what was written is stored: it is searchable once the searchers catch up)", index, seq, strings.TrimSuffix(behind, ";"))
		}
	}
}
