package shard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/registry"
	index "github.com/blevesearch/bleve_index_api"
	"github.com/nats-io/nuid"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/querystats"
)

// A point in time is one scorch snapshot of a replica, held so that the
// searches of a cursor walk (search_after) all read the same documents,
// whatever is written meanwhile. scorch keeps a snapshot's segments while
// a reader of it is open, so holding one costs no copy: only the segments
// merged away meanwhile stay on disk and in memory until it ends.
//
// bleve searches an index, not a reader, and opens a reader of the index's
// current root for each search. A point in time is therefore an index of
// its own bleve type (pitIndexType), opened through bleve like any index,
// whose every reader is the held snapshot: the searches, facets, sorts,
// highlights and statistics of a point in time are bleve's and Quarry's
// own code, unchanged.

// pitIndexType is the bleve index type of a point in time.
const pitIndexType = "quarry-pit"

// pitConfigKey carries the *pitIndex to its constructor through bleve's
// runtime configuration.
const pitConfigKey = "quarry_point_in_time"

func init() {
	if err := registry.RegisterIndexType(pitIndexType, newPITIndex); err != nil {
		panic(err)
	}
}

// errPITReadOnly: nothing writes to a point in time.
var errPITReadOnly = errors.New("a point in time is read-only")

// pitIndex is bleve's index.Index over one held scorch snapshot.
type pitIndex struct {
	snap    *scorch.IndexSnapshot // one reference, dropped by Close
	tokens  *tokenCache
	columns *columnCache // its replica's: segments it shares are read from them
	// mu orders Reader and Close: a reader taken before Close holds a
	// reference of its own; none is taken after (bleve's index guards
	// only its own searches, and the statistics phase reads through
	// Advanced).
	mu     sync.Mutex
	closed bool
}

func newPITIndex(_ string, config map[string]any, _ *index.AnalysisQueue) (index.Index, error) {
	p, ok := config[pitConfigKey].(*pitIndex)
	if !ok {
		return nil, errors.New("a point in time is opened by Replica.OpenPIT only")
	}
	return p, nil
}

func (p *pitIndex) Open() error { return nil }

// Close drops the held reference: scorch may then remove the segments
// only this snapshot used.
func (p *pitIndex) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return p.snap.DecRef()
}

func (p *pitIndex) Update(index.Document) error   { return errPITReadOnly }
func (p *pitIndex) Delete(string) error           { return errPITReadOnly }
func (p *pitIndex) Batch(*index.Batch) error      { return errPITReadOnly }
func (p *pitIndex) SetInternal(_, _ []byte) error { return errPITReadOnly }
func (p *pitIndex) DeleteInternal([]byte) error   { return errPITReadOnly }
func (p *pitIndex) StatsMap() map[string]any      { return map[string]any{} }
func (p *pitIndex) Reader() (index.IndexReader, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPITGone
	}
	p.snap.AddRef()
	return querystats.NewReader(p.snap, p.tokens).WithIDs(p.columns), nil
}

// pit is one open point in time of a replica.
type pit struct {
	idx     bleve.Index
	seq     uint64 // the stream sequence its snapshot holds
	expires time.Time
	timer   *time.Timer
}

// pits are a replica's open points in time, by id.
type pits struct {
	mu     sync.Mutex
	byID   map[string]*pit
	closed bool
}

// ErrPITGone is the error of a point in time that expired, was closed, or
// was never opened on this replica: a caller names it to the user and
// opens another.
var ErrPITGone = api.Errorf(api.CodeNotFound, "the point in time has expired or ended (its replica restarted, was replaced or changed its mapping): open another")

// DefaultMaxPITs is Config.MaxPITs's default.
const DefaultMaxPITs = 64

// OpenPIT holds the replica's current snapshot for keepAlive (renewed by
// each search that uses it) as point in time id (a new one when id is
// ""; a broker gives every shard of a search the same) and returns the
// id and the stream sequence it holds. A replica holds at most
// Config.MaxPITs at once.
func (r *Replica) OpenPIT(id string, keepAlive time.Duration) (_ string, seq uint64, err error) {
	if keepAlive <= 0 {
		return "", 0, api.BadRequest("a point in time's keep_alive must be positive")
	}
	idx, err := r.acquire()
	if err != nil {
		return "", 0, err
	}
	defer r.mu.RUnlock()
	adv, err := idx.Advanced()
	if err != nil {
		return "", 0, err
	}
	si, ok := adv.(*statsIndex)
	if !ok {
		return "", 0, fmt.Errorf("shard %d: index %T has no point in time", r.cfg.Shard, adv)
	}
	r.pits.mu.Lock()
	defer r.pits.mu.Unlock()
	if r.pits.closed {
		return "", 0, ErrClosed
	}
	if id == "" {
		id = nuid.Next()
	}
	if r.pits.byID[id] != nil {
		return "", 0, api.Errorf(api.CodeConflict, "shard %d holds a point in time %q already", r.cfg.Shard, id)
	}
	if max := r.cfg.maxPITs(); len(r.pits.byID) >= max {
		return "", 0, api.Errorf(api.CodeOverloaded, "shard %d holds %d points in time, the most it may (--max-points-in-time): close one or let one expire", r.cfg.Shard, max)
	}
	// The sequence and the snapshot together, between two batches.
	r.applyMu.Lock()
	seq = r.Seq()
	rd, err := si.Index.Reader()
	r.applyMu.Unlock()
	if err != nil {
		return "", 0, err
	}
	snap, ok := rd.(*scorch.IndexSnapshot)
	if !ok {
		rd.Close()
		return "", 0, fmt.Errorf("shard %d: reader %T is no scorch snapshot", r.cfg.Shard, rd)
	}
	p := &pitIndex{snap: snap, tokens: si.tokens, columns: si.columns}
	pidx, err := openPITIndex(p)
	if err != nil {
		p.Close()
		return "", 0, fmt.Errorf("shard %d: open point in time: %w", r.cfg.Shard, err)
	}
	if r.pits.byID == nil {
		r.pits.byID = map[string]*pit{}
	}
	pt := &pit{idx: pidx, seq: seq, expires: time.Now().Add(keepAlive)}
	pt.timer = time.AfterFunc(keepAlive, func() { r.expirePIT(id) })
	r.pits.byID[id] = pt
	return id, seq, nil
}

// openPITIndex opens p through bleve, which reads an index's type from a
// directory: one made for the moment, removed once open (a point in time
// has no files of its own).
func openPITIndex(p *pitIndex) (bleve.Index, error) {
	dir, err := os.MkdirTemp("", "quarry-pit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	meta := []byte(`{"storage":"","index_type":"` + pitIndexType + `"}`)
	if err := os.WriteFile(filepath.Join(dir, indexMetaFile), meta, 0o600); err != nil {
		return nil, err
	}
	return bleve.OpenUsing(dir, map[string]any{pitConfigKey: p})
}

// usePIT returns the index and sequence of point in time id and renews
// its keep-alive.
func (r *Replica) usePIT(id string, keepAlive time.Duration) (bleve.Index, uint64, error) {
	r.pits.mu.Lock()
	defer r.pits.mu.Unlock()
	pt := r.pits.byID[id]
	if pt == nil {
		return nil, 0, ErrPITGone
	}
	if keepAlive > 0 {
		pt.expires = time.Now().Add(keepAlive)
		pt.timer.Reset(keepAlive)
	}
	return pt.idx, pt.seq, nil
}

// expirePIT ends point in time id unless it was renewed since its timer
// was set.
func (r *Replica) expirePIT(id string) {
	r.pits.mu.Lock()
	pt := r.pits.byID[id]
	if pt == nil {
		r.pits.mu.Unlock()
		return
	}
	if wait := time.Until(pt.expires); wait > 0 {
		pt.timer.Reset(wait)
		r.pits.mu.Unlock()
		return
	}
	delete(r.pits.byID, id)
	r.pits.mu.Unlock()
	pt.idx.Close() // waits for the searches using it
}

// ClosePIT ends point in time id at once; closing one that is gone is no
// error.
func (r *Replica) ClosePIT(id string) {
	r.pits.mu.Lock()
	pt := r.pits.byID[id]
	delete(r.pits.byID, id)
	r.pits.mu.Unlock()
	if pt != nil {
		pt.timer.Stop()
		pt.idx.Close()
	}
}

// PITs returns how many points in time the replica holds.
func (r *Replica) PITs() int {
	r.pits.mu.Lock()
	defer r.pits.mu.Unlock()
	return len(r.pits.byID)
}

// closePITs ends every point in time: before the index they read is
// closed (Close) or opened again (a mapping change). With end, no more
// may open.
func (r *Replica) closePITs(end bool) {
	r.pits.mu.Lock()
	open := r.pits.byID
	r.pits.byID = nil
	r.pits.closed = r.pits.closed || end
	r.pits.mu.Unlock()
	for _, pt := range open {
		pt.timer.Stop()
		pt.idx.Close()
	}
}
