package plugins

import (
	"iter"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Descriptions of the metrics a Collector exports. Every series is
// labelled with the index whose pipeline runs the plugin, the plugin's
// name and its version.
var (
	pluginLabels    = []string{"index", "plugin", "version"}
	descCalls       = prometheus.NewDesc("quarry_plugin_calls_total", "Calls of a plugin version's hook, failed ones included.", pluginLabels, nil)
	descErrors      = prometheus.NewDesc("quarry_plugin_errors_total", "Failed calls of a plugin version, by kind of failure.", append(slices.Clip(pluginLabels), "kind"), nil)
	descCallSeconds = prometheus.NewDesc("quarry_plugin_call_duration_seconds", "Time of one call of a plugin version's hook: waiting for an instance, copying in, running, decoding out.", pluginLabels, nil)
	descInstances   = prometheus.NewDesc("quarry_plugin_instances", "Live (instantiated) instances of a plugin version.", pluginLabels, nil)
	descMemory      = prometheus.NewDesc("quarry_plugin_memory_bytes", "Linear memory of a plugin version's live instances, as of each one's last call.", pluginLabels, nil)
	descGrown       = prometheus.NewDesc("quarry_plugin_instances_grown_total", "Calls that found every pooled instance of a plugin version busy and ran on an extra instance of their own, within the team's instance budget.", pluginLabels, nil)

	descTeamSeconds   = prometheus.NewDesc("quarry_team_plugin_seconds_total", "Time the calls of a team's plugins ran (held an instance): about the CPU time the team's plugins used on this broker.", []string{"team"}, nil)
	descTeamWaited    = prometheus.NewDesc("quarry_team_plugin_calls_waited_total", "Calls of a team's plugins that found its --team-max-plugin-calls all running and waited for one to end (or failed busy at their deadline).", []string{"team"}, nil)
	descTeamRunning   = prometheus.NewDesc("quarry_team_plugin_calls_running", "Calls of a team's plugins running now on this broker, of its --team-max-plugin-calls.", []string{"team"}, nil)
	descTeamInstances = prometheus.NewDesc("quarry_team_plugin_instances", "Plugin instances a team's loaded plugins reserve on this broker, of its --team-max-instances.", []string{"team"}, nil)
)

// errorKinds are the kinds of failure, in the order they are exported.
var errorKinds = []ErrorKind{KindTimeout, KindTrap, KindMemory, KindOutput, KindMalformed, KindPlugin, KindBusy, KindStopped}

// NewCollector returns a collector of the metrics every plugin listed by
// plugins keeps (calls, errors by kind, call latency, live instances and
// their memory), read when scraped, so calls pay nothing for them.
// plugins yields each loaded plugin with the index it serves; a plugin
// serving two indexes (the same binary and settings in two of a team's
// pipelines) is listed under both with the same values. A plugin listed
// twice under one index (a step and its shadow on the same version) is
// exported once.
func NewCollector(plugins iter.Seq2[string, *Plugin]) prometheus.Collector {
	return &collector{plugins: plugins}
}

type collector struct {
	plugins iter.Seq2[string, *Plugin]
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descErrors, descCallSeconds, descInstances, descMemory, descGrown} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ index, name, version string }
	seen := map[key]bool{}
	bounds := make([]float64, len(latencyBounds))
	for i, b := range latencyBounds {
		bounds[i] = b.Seconds()
	}
	for index, p := range c.plugins {
		if p == nil {
			continue
		}
		k := key{index, p.spec.Name, p.spec.Version}
		if seen[k] {
			continue
		}
		seen[k] = true
		lv := []string{index, p.spec.Name, p.spec.Version}
		ch <- prometheus.MustNewConstMetric(descCalls, prometheus.CounterValue, float64(p.Metrics.Calls.Load()), lv...)
		errs := p.Metrics.Errors()
		for _, kind := range errorKinds {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(errs[kind]), append(lv, string(kind))...)
		}
		cumulative, count, sum := p.Metrics.Latency()
		buckets := make(map[float64]uint64, len(bounds))
		for i, b := range bounds {
			buckets[b] = cumulative[i]
		}
		ch <- prometheus.MustNewConstHistogram(descCallSeconds, count, sum.Seconds(), buckets, lv...)
		ch <- prometheus.MustNewConstMetric(descInstances, prometheus.GaugeValue, float64(p.LiveInstances()), lv...)
		ch <- prometheus.MustNewConstMetric(descMemory, prometheus.GaugeValue, float64(p.MemoryBytes()), lv...)
		ch <- prometheus.MustNewConstMetric(descGrown, prometheus.CounterValue, float64(p.Metrics.grown.Load()), lv...)
	}
}

// Collector returns a collector of each team's plugin time and reserved
// instances (quarry_team_plugin_seconds_total, quarry_team_plugin_instances),
// read when scraped.
func (t *Teams) Collector() prometheus.Collector { return teamsCollector{t} }

type teamsCollector struct{ t *Teams }

// Describe implements prometheus.Collector.
func (c teamsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descTeamSeconds
	ch <- descTeamInstances
	ch <- descTeamWaited
	ch <- descTeamRunning
}

// Collect implements prometheus.Collector.
func (c teamsCollector) Collect(ch chan<- prometheus.Metric) {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	for team, r := range c.t.rts {
		ch <- prometheus.MustNewConstMetric(descTeamSeconds, prometheus.CounterValue, float64(r.busyNS.Load())/1e9, team)
		ch <- prometheus.MustNewConstMetric(descTeamInstances, prometheus.GaugeValue, float64(r.Instances()), team)
		ch <- prometheus.MustNewConstMetric(descTeamWaited, prometheus.CounterValue, float64(r.callsWaited()), team)
		ch <- prometheus.MustNewConstMetric(descTeamRunning, prometheus.GaugeValue, float64(r.CallsRunning()), team)
	}
}
