package indexer

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/shard"
)

// SnapshotBuckets are the upper bounds (seconds) of the snapshot duration
// histogram: 10ms to 10 minutes.
var SnapshotBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// metrics are the indexer's Prometheus metrics.
type metrics struct {
	snapshots  *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	size       *prometheus.GaugeVec
	generation *prometheus.GaugeVec
}

// newMetrics makes the indexer's metrics and registers them, with the
// collector of its replicas' progress, on reg (nil: a registry of its
// own, which nothing serves).
func newMetrics(ix *Indexer, reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_indexer_snapshots_total",
			Help: "Snapshot generations the indexer tried to publish, by index and result (ok, error); an index unchanged since its last generation is not counted."},
			[]string{"index", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "quarry_indexer_snapshot_duration_seconds",
			Help: "Time to copy, pack and upload every shard of a published snapshot generation, by index.", Buckets: SnapshotBuckets},
			[]string{"index"}),
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "quarry_indexer_snapshot_size_bytes",
			Help: "Packed size of the last snapshot generation published, every shard together, by index."}, []string{"index"}),
		generation: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "quarry_indexer_snapshot_generation",
			Help: "Last snapshot generation the indexer published, by index."}, []string{"index"}),
	}
	for _, c := range []prometheus.Collector{m.snapshots, m.duration, m.size, m.generation, &replicaCollector{ix: ix}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("indexer: register metrics: %w", err)
		}
	}
	return m, nil
}

// published records a snapshot generation published.
func (m *metrics) published(index string, generation uint64, bytes int64, took time.Duration) {
	m.snapshots.WithLabelValues(index, "ok").Inc()
	m.duration.WithLabelValues(index).Observe(took.Seconds())
	m.size.WithLabelValues(index).Set(float64(bytes))
	m.generation.WithLabelValues(index).Set(float64(generation))
}

// failed records a snapshot that could not be published.
func (m *metrics) failed(index string) { m.snapshots.WithLabelValues(index, "error").Inc() }

// drop forgets an index's series (the index was removed).
func (m *metrics) drop(index string) {
	l := prometheus.Labels{"index": index}
	m.snapshots.DeletePartialMatch(l)
	m.duration.DeletePartialMatch(l)
	m.size.DeletePartialMatch(l)
	m.generation.DeletePartialMatch(l)
}

// replicaCollector exports what the indexer's replicas have applied of
// the stream, read when scraped.
type replicaCollector struct{ ix *Indexer }

var (
	shardLabels = []string{"index", "shard"}
	descDocs    = prometheus.NewDesc("quarry_indexer_documents_total",
		"Document messages the indexer applied from the stream since it opened the shard, by index, shard and result: indexed, deleted, rejected (skipped for good: over the index's documents.max_fields or max_depth, malformed JSON, a document bleve refused, a bad subject).",
		append(shardLabels[:2:2], "result"), nil)
	descLag = prometheus.NewDesc("quarry_indexer_stream_lag_messages", "Messages of a shard the stream held after the last one the indexer applied, as of its last applied batch.", shardLabels, nil)
	descSeq = prometheus.NewDesc("quarry_indexer_shard_stream_sequence", "Last stream sequence the indexer applied to a shard.", shardLabels, nil)
	// An index's field paths against their limit: documents that would
	// take it past are refused where they come in.
	descFields      = prometheus.NewDesc("quarry_indexer_index_fields", "Distinct field paths the index's documents were sent with (the quarry-fields bucket), read when scraped.", []string{"index"}, nil)
	descFieldsLimit = prometheus.NewDesc("quarry_indexer_index_fields_limit", "The index's documents.max_index_fields: a document that would take quarry_indexer_index_fields past it is refused.", []string{"index"}, nil)
	// The records of rejected documents (quarry index rejected).
	descRejectRecords = prometheus.NewDesc("quarry_indexer_rejection_records_total",
		"Records of rejected documents (those counted in quarry_indexer_documents_total{result=\"rejected\"}) the indexer wrote to the QUARRY_REJECTED stream, by result: recorded, dropped (its queue was full, or it was stopping), failed (JetStream refused it or did not answer).",
		[]string{"result"}, nil)
)

// fieldsReadTimeout bounds reading every index's field paths in one
// scrape.
const fieldsReadTimeout = 2 * time.Second

// Describe implements prometheus.Collector.
func (c *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDocs, descLag, descSeq, descFields, descFieldsLimit, descRejectRecords} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	c.ix.mu.Lock()
	type entry struct {
		index    string
		def      api.IndexDefinition
		replicas []*shard.Replica
	}
	var all []entry
	for name, st := range c.ix.indexes {
		all = append(all, entry{name, st.def, st.replicas})
	}
	c.ix.mu.Unlock()
	recorded, dropped, failed := c.ix.rejects.Counts()
	ch <- prometheus.MustNewConstMetric(descRejectRecords, prometheus.CounterValue, float64(recorded), "recorded")
	ch <- prometheus.MustNewConstMetric(descRejectRecords, prometheus.CounterValue, float64(dropped), "dropped")
	ch <- prometheus.MustNewConstMetric(descRejectRecords, prometheus.CounterValue, float64(failed), "failed")
	ctx, cancel := context.WithTimeout(context.Background(), fieldsReadTimeout)
	defer cancel()
	for _, e := range all {
		if fields, _, err := c.ix.store.IndexFields(ctx, e.def); err == nil {
			ch <- prometheus.MustNewConstMetric(descFields, prometheus.GaugeValue, float64(len(fields)), e.index)
		}
		ch <- prometheus.MustNewConstMetric(descFieldsLimit, prometheus.GaugeValue, float64(e.def.Documents.Effective().MaxIndexFields), e.index)
		for i, r := range e.replicas {
			s := strconv.Itoa(i)
			p := r.Progress()
			ch <- prometheus.MustNewConstMetric(descDocs, prometheus.CounterValue, float64(p.Indexed), e.index, s, "indexed")
			ch <- prometheus.MustNewConstMetric(descDocs, prometheus.CounterValue, float64(p.Deleted), e.index, s, "deleted")
			ch <- prometheus.MustNewConstMetric(descDocs, prometheus.CounterValue, float64(p.Rejected), e.index, s, "rejected")
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(p.Pending), e.index, s)
			ch <- prometheus.MustNewConstMetric(descSeq, prometheus.GaugeValue, float64(p.Seq), e.index, s)
		}
	}
}
