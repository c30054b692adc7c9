package searcher

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/wire"
)

// LatencyBuckets are the upper bounds (seconds) of the searcher's latency
// histograms: 10µs to 10s.
var LatencyBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// Reasons a shard request is refused before any shard sees it.
const (
	refusedOverloaded = iota // the work queue is full
	refusedExpired           // its deadline passed while it waited
	refusedBadRequest        // a bad subject, header or body
	refusedNotServed         // the shard is not served here
	numRefused
)

var refusedNames = [numRefused]string{"overloaded", "expired", "bad_request", "not_served"}

// metrics are the searcher's Prometheus metrics. A served shard's series
// are resolved once, when it starts serving (shardMetrics).
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	swaps     *prometheus.CounterVec
	swapFails *prometheus.CounterVec
	queueWait prometheus.Histogram
	// heavyWaited is the time heavy teams' requests gave way to other
	// teams' at their checkpoints (Config.HeavyPause, HeavyLinger).
	heavyWaited prometheus.Counter
	refused     [numRefused]prometheus.Counter
	// tooLarge counts the shard replies refused as response_too_large
	// (Config.MaxReplyBytes, the NATS server's max_payload).
	tooLarge prometheus.Counter
	// panics counts shard requests that panicked (answered with an
	// internal error; the searcher serves on).
	panics prometheus.Counter
}

// shardMetrics are one served shard's series.
type shardMetrics struct {
	// ok and failed count requests by phase (see phaseOf).
	ok, failed [2]prometheus.Counter
	search     prometheus.Observer
	swapped    prometheus.Counter
	swapFailed prometheus.Counter
}

// newMetrics makes the searcher's metrics and registers them, with the
// collector of its shards' state, on reg (nil: a registry of its own,
// which nothing serves).
func newMetrics(s *Searcher, reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_searcher_requests_total",
			Help: "Shard requests answered, by index, shard, phase (search, stats) and outcome (ok, error)."},
			[]string{"index", "shard", "phase", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "quarry_searcher_search_duration_seconds",
			Help: "Time of one shard search in bleve, queue wait not included, by index and shard.", Buckets: LatencyBuckets},
			[]string{"index", "shard"}),
		swaps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_searcher_generation_swaps_total",
			Help: "New snapshot generations swapped in, by index and shard."}, []string{"index", "shard"}),
		swapFails: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_searcher_generation_swap_failures_total",
			Help: "New snapshot generations refused after every retry (the old one keeps serving), by index and shard."}, []string{"index", "shard"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "quarry_searcher_queue_wait_seconds",
			Help: "Time a shard request waited for a worker.", Buckets: LatencyBuckets}),
		tooLarge: prometheus.NewCounter(prometheus.CounterOpts{Name: "quarry_searcher_replies_too_large_total",
			Help: "Shard searches stopped as response_too_large: their reply, counted as its hits were added (ids, stored fields, explanations), came to more than --max-shard-reply-bytes or what one NATS reply carries."}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Name: "quarry_searcher_panics_total",
			Help: "Shard requests that panicked: each answered with an internal error carrying its request id and logged with its stack; the searcher serves on."}),
		heavyWaited: prometheus.NewCounter(prometheus.CounterOpts{Name: "quarry_searcher_heavy_waited_seconds_total",
			Help: "Time heavy teams' running shard requests waited at their checkpoints for other teams' requests to finish, and lingered after them (--heavy-pause, --heavy-linger)."}),
	}
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_searcher_requests_refused_total",
		Help: "Shard requests refused before a shard saw them, by reason: overloaded (queue full), expired (deadline passed in the queue), bad_request, not_served."},
		[]string{"reason"})
	for i, r := range refusedNames {
		m.refused[i] = refused.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.swaps, m.swapFails, m.queueWait, m.heavyWaited, m.tooLarge, m.panics, refused, &shardCollector{s: s}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("searcher: register metrics: %w", err)
		}
	}
	return m, nil
}

// shard resolves the series of a shard that starts serving.
func (m *metrics) shard(index string, sh int) *shardMetrics {
	s := strconv.Itoa(sh)
	sm := &shardMetrics{search: m.duration.WithLabelValues(index, s),
		swapped: m.swaps.WithLabelValues(index, s), swapFailed: m.swapFails.WithLabelValues(index, s)}
	for i, name := range phaseNames {
		sm.ok[i] = m.requests.WithLabelValues(index, s, name, "ok")
		sm.failed[i] = m.requests.WithLabelValues(index, s, name, "error")
	}
	return sm
}

// phaseNames label the phases of a shard request, by phaseOf.
var phaseNames = [2]string{"search", "stats"}

// phaseStats is phaseNames' index of statistics.
const phaseStats = 1

// phaseOf is a request phase's index in phaseNames (a dictionary's
// statistics are statistics).
func phaseOf(phase string) int {
	if phase == wire.PhaseStats || phase == wire.PhaseDictionary {
		return phaseStats
	}
	return 0
}

// answered counts a request a shard answered (err nil) or failed.
func (sm *shardMetrics) answered(phase string, err error) {
	if err != nil {
		sm.failed[phaseOf(phase)].Inc()
	} else {
		sm.ok[phaseOf(phase)].Inc()
	}
}

// drop forgets an index's series (it is no longer served).
func (m *metrics) drop(index string) {
	l := prometheus.Labels{"index": index}
	m.requests.DeletePartialMatch(l)
	m.duration.DeletePartialMatch(l)
	m.swaps.DeletePartialMatch(l)
	m.swapFails.DeletePartialMatch(l)
}

// shardCollector exports each served shard's state, read when scraped.
type shardCollector struct{ s *Searcher }

var (
	shardLabels    = []string{"index", "shard"}
	descGeneration = prometheus.NewDesc("quarry_searcher_shard_generation", "Snapshot generation a served shard was opened from (0: none, the stream replayed from the start).", shardLabels, nil)
	descSeq        = prometheus.NewDesc("quarry_searcher_shard_stream_sequence", "Last stream sequence a served shard has applied.", shardLabels, nil)
	descLag        = prometheus.NewDesc("quarry_searcher_replay_lag_messages", "Messages of a served shard the stream held after the last one applied, as of the last applied batch.", shardLabels, nil)
	descDocs       = prometheus.NewDesc("quarry_searcher_shard_documents", "Documents in a served shard.", shardLabels, nil)
	descSegments   = prometheus.NewDesc("quarry_searcher_shard_segments", "Segments of a served shard, each visited by every search: persisted files (where=file) and fresh batches in memory (where=memory).", append(shardLabels, "where"), nil)
	descReindexed  = prometheus.NewDesc("quarry_searcher_shard_reindexed_documents_total", "Documents of a served shard indexed again, unchanged, to fold its fresh in-memory segments into one (--fresh-segments).", shardLabels, nil)
	descPITs       = prometheus.NewDesc("quarry_searcher_shard_points_in_time", "Points in time a served shard's replica holds (search cursors' snapshots; at most --max-points-in-time).", shardLabels, nil)
	descColBytes   = prometheus.NewDesc("quarry_searcher_shard_column_bytes", "Bytes of the columns a served shard's replica keeps of the short fields searches ask for (at most --column-bytes).", shardLabels, nil)
	descColHits    = prometheus.NewDesc("quarry_searcher_shard_column_hits_total", "Hits of a served shard whose fields were read from columns, not from stored documents.", shardLabels, nil)
)

// Describe implements prometheus.Collector.
func (c *shardCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descGeneration, descSeq, descLag, descDocs, descSegments, descReindexed, descPITs, descColBytes, descColHits} {
		ch <- d
	}
}

// servedShard is a shard and the replica serving it.
type servedShard struct {
	index   string
	shard   int
	replica *shard.Replica
	lent    bool // see Stats.Lent
}

// shardStates lists the served shards.
func (s *Searcher) shardStates() []servedShard {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []servedShard
	for name, st := range s.indexes {
		for i, sl := range st.shards {
			out = append(out, servedShard{name, i, sl.cur.Load(), sl.lent})
		}
	}
	return out
}

// Collect implements prometheus.Collector.
func (c *shardCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.s.shardStates() {
		lv := []string{st.index, strconv.Itoa(st.shard)}
		p := st.replica.Progress()
		ch <- prometheus.MustNewConstMetric(descGeneration, prometheus.GaugeValue, float64(st.replica.Generation()), lv...)
		ch <- prometheus.MustNewConstMetric(descSeq, prometheus.GaugeValue, float64(p.Seq), lv...)
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(p.Pending), lv...)
		if docs, err := st.replica.DocCount(); err == nil {
			ch <- prometheus.MustNewConstMetric(descDocs, prometheus.GaugeValue, float64(docs), lv...)
		}
		files, memory := st.replica.Segments()
		ch <- prometheus.MustNewConstMetric(descSegments, prometheus.GaugeValue, float64(files), append(lv, "file")...)
		ch <- prometheus.MustNewConstMetric(descSegments, prometheus.GaugeValue, float64(memory), append(lv, "memory")...)
		ch <- prometheus.MustNewConstMetric(descReindexed, prometheus.CounterValue, float64(p.Reindexed), lv...)
		ch <- prometheus.MustNewConstMetric(descPITs, prometheus.GaugeValue, float64(st.replica.PITs()), lv...)
		cols := st.replica.Columns()
		ch <- prometheus.MustNewConstMetric(descColBytes, prometheus.GaugeValue, float64(cols.Bytes), lv...)
		ch <- prometheus.MustNewConstMetric(descColHits, prometheus.CounterValue, float64(cols.Served), lv...)
	}
}
