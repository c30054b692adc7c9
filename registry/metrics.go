package registry

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/internal/meta"
)

// metrics are the admin service's Prometheus metrics.
type metrics struct {
	uploadRefused *prometheus.CounterVec
	gateJobs      prometheus.Gauge
}

// newMetrics makes the admin service's metrics and registers them on reg
// (nil: a registry of its own, which nothing serves).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		uploadRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_registry_upload_refusals_total",
			Help: "Plugin upload chunks the admin API refused for a bound, by team and limit: chunk_size (over 512 KiB), plugin_size (past the 64 MiB module limit), order (a gap, an overlap, a chunk after a small one), quota (the team's staged uploads), staging (the shared stream full)."},
			[]string{"team", "limit"}),
		gateJobs: prometheus.NewGauge(prometheus.GaugeOpts{Name: "quarry_registry_gate_jobs",
			Help: "Relevance gates running on this admin service (an activation's, a promotion's or a pipeline.set's, at most one per index, each bounded by --gate-timeout)."}),
	}
	for _, c := range []prometheus.Collector{m.uploadRefused, m.gateJobs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("admin: register metrics: %w", err)
		}
	}
	return m, nil
}

// refusedChunk counts a chunk refused for one of the bounds of uploads.
func (m *metrics) refusedChunk(team string, err error) {
	var le *meta.UploadLimitError
	if m != nil && errors.As(err, &le) {
		m.uploadRefused.WithLabelValues(team, le.Limit).Inc()
	}
}
