package broker

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/plugins"
)

// The query path never writes the control plane (the KV buckets) itself:
// it hands what it has to write to the broker's control-plane writer, one
// goroutine that Run starts and stops, through a bounded queue and a send
// that never blocks. A full queue drops the write, counts it
// (quarry_broker_control_plane_dropped_total) and logs it: a query never
// waits on the control plane, and a slow or unreachable KV store cannot
// pile up goroutines on the query path.

// Queue lengths of the writer's lanes. Trips are rare (once per step and
// loaded pipeline version); an interleaved search records its sides every
// time.
const (
	fallbackQueue     = 256
	interleaveQueue   = 4096
	cpFlushTimeout    = 5 * time.Second // what shutdown gives the queued writes
	interleaveTimeout = 5 * time.Second // one interleaved search's record
)

// cpKind is what a control-plane write does.
type cpKind uint8

const (
	// cpTakeOut records a fail-open step's "taken out" event and marks it
	// taken out in a new pipeline revision (takeOut).
	cpTakeOut cpKind = iota
	// cpRollBack rolls a fail-closed step back (rollBack).
	cpRollBack
	// cpInterleaved records an interleaved search's sides.
	cpInterleaved
)

// Lanes of the writer: a burst of interleaved searches must not crowd a
// fallback out of the queue, so each has its own, and the writer takes
// fallbacks first.
const (
	laneFallback = iota
	laneInterleave
	numLanes
)

var laneNames = [numLanes]string{"fallback", "interleave"}

func (k cpKind) lane() int {
	if k == cpInterleaved {
		return laneInterleave
	}
	return laneFallback
}

// cpWrite is one write the query path asks the writer for.
type cpWrite struct {
	kind  cpKind
	index string
	// cpTakeOut, cpRollBack: the step's plugin and version, and why it
	// tripped.
	pluginKind      plugins.Kind
	plugin, version string
	reason          string
	ev              api.PluginEvent // cpTakeOut's event
	// cpInterleaved: the search's query id and sides.
	qid string
	rec *api.InterleavedQuery
}

// controlPlane is the broker's control-plane writer: the queue the query
// path emits to, and the goroutine (run, started by start) that turns
// each write into KV writes, in the order emitted (per lane).
type controlPlane struct {
	lanes [numLanes]cpLane
	// write does one write; its ctx is done when shutdown's bound passes.
	write func(ctx context.Context, w cpWrite)
	log   *slog.Logger
	// flush bounds, at shutdown, the writing of what is still queued.
	flush time.Duration
	// running is set while the goroutine runs (start to stop).
	running atomic.Bool
}

type cpLane struct {
	queue   chan cpWrite
	dropped prometheus.Counter
	// lastWarn (unix ns) and unwarned throttle the warnings of a full
	// queue to one a second, with the count dropped since the last.
	lastWarn atomic.Int64
	unwarned atomic.Int64
}

// newControlPlane makes a writer whose lanes hold sizes[lane] writes and
// count drops in dropped (by lane name); write does each write.
func newControlPlane(log *slog.Logger, dropped *prometheus.CounterVec, sizes [numLanes]int, write func(context.Context, cpWrite)) *controlPlane {
	c := &controlPlane{write: write, log: log, flush: cpFlushTimeout}
	for i := range c.lanes {
		c.lanes[i].queue = make(chan cpWrite, sizes[i])
		c.lanes[i].dropped = dropped.WithLabelValues(laneNames[i])
	}
	return c
}

// emit queues w for the writer without ever waiting: if its lane is full,
// w is dropped, counted and logged (at most once a second), and emit
// reports false.
func (c *controlPlane) emit(w cpWrite) bool {
	l := &c.lanes[w.kind.lane()]
	select {
	case l.queue <- w:
		return true
	default:
	}
	l.dropped.Inc()
	n := l.unwarned.Add(1)
	now := time.Now().UnixNano()
	if last := l.lastWarn.Load(); now-last >= int64(time.Second) && l.lastWarn.CompareAndSwap(last, now) {
		n = l.unwarned.Swap(0)
		c.log.Warn("control-plane queue full: write dropped", "lane", laneNames[w.kind.lane()], "index", w.index,
			"plugin", w.plugin, "dropped", n, "running", c.running.Load())
	}
	return false
}

// start starts the writer's goroutine and returns the function that stops
// it: stop lets it write what is queued, within c.flush (the writes still
// running then have their contexts cancelled and the rest are dropped,
// counted and logged), and returns once the goroutine has.
func (c *controlPlane) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	quit, done := make(chan struct{}), make(chan struct{})
	c.running.Store(true)
	go func() {
		defer close(done)
		defer c.running.Store(false)
		c.run(ctx, quit)
	}()
	return func() {
		close(quit)
		t := time.AfterFunc(c.flush, cancel)
		<-done
		t.Stop()
		cancel()
	}
}

// run writes what is queued, fallbacks first, until quit is closed; then
// what is still queued, until ctx is done.
func (c *controlPlane) run(ctx context.Context, quit <-chan struct{}) {
	fb, il := c.lanes[laneFallback].queue, c.lanes[laneInterleave].queue
	for {
		select {
		case <-quit:
			c.flushQueued(ctx)
			return
		default:
		}
		select {
		case w := <-fb:
			c.write(ctx, w)
			continue
		default:
		}
		select {
		case w := <-fb:
			c.write(ctx, w)
		case w := <-il:
			c.write(ctx, w)
		case <-quit:
			c.flushQueued(ctx)
			return
		}
	}
}

// flushQueued writes what the lanes hold at shutdown, fallbacks first,
// while ctx lasts, and drops (and counts) the rest.
func (c *controlPlane) flushQueued(ctx context.Context) {
	var written, dropped [numLanes]int
	for i := range c.lanes {
		l := &c.lanes[i]
		for more := true; more; {
			select {
			case w := <-l.queue:
				if ctx.Err() != nil {
					l.dropped.Inc()
					dropped[i]++
					continue
				}
				c.write(ctx, w)
				written[i]++
			default:
				more = false
			}
		}
	}
	log := c.log.Info
	if dropped != [numLanes]int{} {
		log = c.log.Warn
	}
	log("control-plane writer stopped", "written_at_shutdown", written[laneFallback]+written[laneInterleave],
		"dropped_at_shutdown", dropped[laneFallback]+dropped[laneInterleave], "bound", c.flush)
}

// writeControlPlane is the broker's control-plane write: the KV writes of
// one emitted write.
func (b *Broker) writeControlPlane(ctx context.Context, w cpWrite) {
	switch w.kind {
	case cpTakeOut:
		ctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
		defer cancel()
		b.recordEvent(ctx, w.ev)
		b.takeOut(ctx, w.index, w.pluginKind, w.plugin, w.version, w.ev)
	case cpRollBack:
		ctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
		defer cancel()
		b.rollBack(ctx, w.index, w.pluginKind, w.plugin, w.version, w.reason)
	case cpInterleaved:
		ctx, cancel := context.WithTimeout(ctx, interleaveTimeout)
		defer cancel()
		b.recordInterleaved(ctx, w.index, w.qid, w.rec)
	}
}
