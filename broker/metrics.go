package broker

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/admission"
	"github.com/quarrysearch/quarry/plugins"
)

// unknownIndex labels requests for an index the broker does not know: a
// name no index can have (they start with a letter or digit), so that
// requests for made-up names cannot create series.
const unknownIndex = "_unknown"

// LatencyBuckets are the upper bounds (seconds) of the broker's latency
// histograms: 10µs to 10s, so that a decode and a slow fan-out both land
// in a bucket of their own size.
var LatencyBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// outcomes are the values of the requests counter's outcome label: "ok"
// and the api error codes. A code a searcher sent that is not one of them
// counts as internal.
var outcomes = [numOutcomes]string{"ok", string(api.CodeBadRequest), string(api.CodeQueryTooComplex), string(api.CodeResponseTooLarge),
	string(api.CodeNotFound), string(api.CodeForbidden), string(api.CodeConflict), string(api.CodeOverloaded), string(api.CodeTimeout),
	string(api.CodeUnavailable), string(api.CodeInternal)}

const (
	numOutcomes     = 11
	outcomeInternal = numOutcomes - 1 // outcomes[outcomeInternal] == internal
)

// outcomeOf is err's index in outcomes.
func outcomeOf(err error) int {
	if err == nil {
		return 0
	}
	var e *api.Error
	if !errors.As(err, &e) {
		return outcomeInternal
	}
	for i, o := range outcomes[1:] {
		if o == string(e.Code) {
			return i + 1
		}
	}
	return outcomeInternal
}

// Stages of a request whose times are observed, in request order.
const (
	stageDecode = iota
	stageRewrite
	stagePlan
	stageStats
	stageFanOut
	stageMerge
	stageRank
	stageEncode
	numStages
)

var stageNames = [numStages]string{"decode", "rewrite", "plan", "stats", "fan_out", "merge", "rank", "encode"}

// Where a search's term statistics came from (exact scoring), the
// label of quarry_broker_statistics_total.
const (
	statsQueryCache = iota // the query's own, cached
	statsTerms             // put together from its terms' cached statistics
	statsRoundTrip         // a statistics round trip to every shard
	statsOneShard          // the index's one shard counted them as it searched
	numStatsSources
)

var statsSourceNames = [numStatsSources]string{"query_cache", "terms", "round_trip", "one_shard"}

// metrics are the broker's Prometheus metrics. Series of an index are
// resolved once and cached (indexMetrics), so a request only looks them up.
type metrics struct {
	statsFrom *prometheus.CounterVec
	// secondRounds counts the shards asked again for all K, by index.
	secondRounds *prometheus.CounterVec
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	stages       *prometheus.HistogramVec
	steps        *prometheus.HistogramVec
	partial      *prometheus.CounterVec
	// cpDropped counts the control-plane writes dropped, by lane.
	cpDropped *prometheus.CounterVec
	// bounds counts the searches refused by a bound on their size or
	// memory, by bound (boundNames).
	bounds [numBounds]prometheus.Counter
	known  func(index string) bool

	mu      sync.RWMutex
	indexes map[string]*indexMetrics
}

// indexMetrics are one index's series.
type indexMetrics struct {
	requests [numOutcomes]prometheus.Counter
	duration prometheus.Observer
	stages   [numStages]prometheus.Observer
	partial  prometheus.Counter
	// statsFrom counts the searches by where their statistics came from.
	statsFrom [numStatsSources]prometheus.Counter
	// secondRounds counts the shards asked again for all K hits.
	secondRounds prometheus.Counter
	index        string
	steps        *prometheus.HistogramVec

	mu       sync.RWMutex
	stepObvs map[stepLabels]prometheus.Observer
}

type stepLabels struct{ kind, plugin string }

// newMetrics makes the broker's metrics and registers them, with the
// collector of what the broker counts anyway (in flight, hedges, plugins),
// on reg (nil: a registry of its own, which nothing serves).
func newMetrics(b *Broker, reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_broker_requests_total",
			Help: "Search requests answered, by index and outcome (ok or the error code; overloaded: refused at once, over the in-flight cap)."},
			[]string{"index", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "quarry_broker_request_duration_seconds",
			Help: "Time from a search request's arrival at the broker to its encoded answer (errors included, overload refusals not).", Buckets: LatencyBuckets},
			[]string{"index"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "quarry_broker_stage_duration_seconds",
			Help: "Time of each stage of a search request: decode, rewrite (every rewriter), plan, stats (the term statistics phase), fan_out, merge, rank (every ranker), encode.", Buckets: LatencyBuckets},
			[]string{"index", "stage"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "quarry_broker_step_duration_seconds",
			Help: "Time of one pipeline step of a search request (building the plugin's input and the call), by index, kind (rewriter, ranker) and plugin.", Buckets: LatencyBuckets},
			[]string{"index", "kind", "plugin"}),
		statsFrom: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_broker_statistics_total",
			Help: "Searches scored with the index's statistics (exact scoring), by index and where the statistics came from: query_cache (the query's own, cached), terms (put together from its terms' cached statistics), round_trip (a statistics round trip to every shard), one_shard (the index's one shard counted them as it searched)."},
			[]string{"index", "source"}),
		secondRounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_broker_shard_second_rounds_total",
			Help: "Shards asked a second time in a search, for all K hits (a page's end or the rankers' depth): the first round asks each of several shards for 1.5 times its share of K plus 5 (--shard-depth), and a shard whose last hit still ranked in the merged top K may hold more of it."},
			[]string{"index"}),
		partial: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_broker_partial_results_total",
			Help: "Search requests answered with results from only some of the index's shards (allow_partial)."},
			[]string{"index"}),
		cpDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_broker_control_plane_dropped_total",
			Help: "Control-plane writes the query path asked for and this broker dropped (its writer's queue full, or still queued when a shutdown's bound ran out), by lane: fallback (a take-out or rollback), interleave (an interleaved search's sides)."},
			[]string{"lane"}),
		known:   func(index string) bool { _, ok := b.Index(index); return ok },
		indexes: map[string]*indexMetrics{},
	}
	bounds := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "quarry_broker_bound_refusals_total",
		Help: "Searches refused by a bound on what they build or hold, by bound: max_explain (explain over --max-explain hits, 400), max_response_bytes (a response over --max-response-bytes as its page was cut, 400), team_max_search_memory (a team's searches in flight over --team-max-search-memory, 429)."},
		[]string{"bound"})
	for i, name := range boundNames {
		m.bounds[i] = bounds.WithLabelValues(name)
	}
	for _, c := range []prometheus.Collector{m.statsFrom, m.secondRounds, m.requests, m.duration, m.stages, m.steps, m.partial, m.cpDropped, bounds, &brokerCollector{b: b},
		plugins.NewCollector(b.loadedPlugins)} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("broker: register metrics: %w", err)
		}
	}
	return m, nil
}

// index returns the series of an index, made on first use; an index the
// broker does not know gets unknownIndex's.
func (m *metrics) index(index string) *indexMetrics {
	m.mu.RLock()
	im := m.indexes[index]
	m.mu.RUnlock()
	if im != nil {
		return im
	}
	if !m.known(index) {
		index = unknownIndex
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if im = m.indexes[index]; im != nil {
		return im
	}
	im = &indexMetrics{index: index, steps: m.steps, duration: m.duration.WithLabelValues(index), stepObvs: map[stepLabels]prometheus.Observer{}}
	for i, o := range outcomes {
		im.requests[i] = m.requests.WithLabelValues(index, o)
	}
	if index == unknownIndex {
		// Requests for unknown indexes fail before any stage, but for one
		// whose index is deleted under it: its stages are not exported.
		im.partial = prometheus.NewCounter(prometheus.CounterOpts{Name: "quarry_unexported"})
		for i := range im.stages {
			im.stages[i] = prometheus.ObserverFunc(func(float64) {})
		}
		for i := range im.statsFrom {
			im.statsFrom[i] = im.partial
		}
		im.secondRounds = im.partial
	} else {
		im.partial = m.partial.WithLabelValues(index)
		im.secondRounds = m.secondRounds.WithLabelValues(index)
		for i, s := range stageNames {
			im.stages[i] = m.stages.WithLabelValues(index, s)
		}
		for i, s := range statsSourceNames {
			im.statsFrom[i] = m.statsFrom.WithLabelValues(index, s)
		}
	}
	m.indexes[index] = im
	return im
}

// drop forgets an index's series (the index was deleted).
func (m *metrics) drop(index string) {
	m.mu.Lock()
	delete(m.indexes, index)
	m.mu.Unlock()
	l := prometheus.Labels{"index": index}
	m.requests.DeletePartialMatch(l)
	m.duration.DeletePartialMatch(l)
	m.stages.DeletePartialMatch(l)
	m.steps.DeletePartialMatch(l)
	m.partial.DeletePartialMatch(l)
	m.statsFrom.DeletePartialMatch(l)
	m.secondRounds.DeletePartialMatch(l)
}

// answered counts a request that ended (well or not) after start.
func (m *metrics) answered(index string, start time.Time, err error) {
	im := m.index(index)
	im.requests[outcomeOf(err)].Inc()
	im.duration.Observe(time.Since(start).Seconds())
}

// served counts a request answered with a response: total is its time,
// decode and encode those of its first and last stage.
func (m *metrics) served(index string, total, decode, encode time.Duration, partial bool) {
	im := m.index(index)
	im.requests[0].Inc()
	im.duration.Observe(total.Seconds())
	im.stages[stageDecode].Observe(decode.Seconds())
	im.stages[stageEncode].Observe(encode.Seconds())
	if partial {
		im.partial.Inc()
	}
}

// bound counts a search refused by one of the bounds of boundNames.
func (m *metrics) bound(b int) { m.bounds[b].Inc() }

// refused counts a request refused as overloaded.
func (m *metrics) refused(index string) {
	m.index(index).requests[outcomeOf(errOverloaded)].Inc()
}

var errOverloaded = api.Errorf(api.CodeOverloaded, "overloaded")

// stage observes one stage's time.
func (im *indexMetrics) stage(stage int, d time.Duration) {
	if im != nil {
		im.stages[stage].Observe(d.Seconds())
	}
}

// statistics counts a search's statistics by where they came from (a
// quiet run, a shadow's, has no series: nil).
func (im *indexMetrics) statistics(source int) {
	if im != nil {
		im.statsFrom[source].Inc()
	}
}

// deepened counts the shards a search asked a second time (a quiet run,
// a shadow's, has no series: nil).
func (im *indexMetrics) deepened(shards int) {
	if im != nil {
		im.secondRounds.Add(float64(shards))
	}
}

// step observes one pipeline step's time. Shadow copies (quiet steps) are
// not observed: their calls are not the request's.
func (m *metrics) step(index string, s *Step, d time.Duration) {
	if s.Quiet() {
		return
	}
	im := m.index(index)
	if im.index == unknownIndex { // deleted under the request
		return
	}
	spec := s.Plugin.Spec()
	k := stepLabels{string(spec.Kind), spec.Name}
	im.mu.RLock()
	o := im.stepObvs[k]
	im.mu.RUnlock()
	if o == nil {
		im.mu.Lock()
		if o = im.stepObvs[k]; o == nil {
			o = im.steps.WithLabelValues(im.index, k.kind, k.plugin)
			im.stepObvs[k] = o
		}
		im.mu.Unlock()
	}
	o.Observe(d.Seconds())
}

// loadedPlugins lists the plugins of every index's pipeline, canaries and
// shadows included.
func (b *Broker) loadedPlugins(yield func(string, *plugins.Plugin) bool) {
	type entry struct {
		index string
		p     *plugins.Plugin
	}
	var all []entry
	for index, pl := range b.pipelines.All {
		for p := range pl.Plugins {
			all = append(all, entry{index, p})
		}
	}
	for _, e := range all {
		if !yield(e.index, e.p) {
			return
		}
	}
}

// brokerCollector exports what the broker counts anyway, read when
// scraped.
type brokerCollector struct{ b *Broker }

var (
	descInFlight      = prometheus.NewDesc("quarry_broker_in_flight_requests", "Search requests the broker is serving now (NATS and HTTP).", nil, nil)
	descInFlightLimit = prometheus.NewDesc("quarry_broker_in_flight_limit", "The most search requests the broker serves at once; more are refused as overloaded.", nil, nil)
	descShardRequests = prometheus.NewDesc("quarry_broker_shard_requests_total", "Requests sent to shards (statistics and search phases), hedges not included.", nil, nil)
	descHedges        = prometheus.NewDesc("quarry_broker_hedges_total", "Hedged shard requests: a second replica asked because the first was slower than the shard's recent latency quantile.", nil, nil)
	descHedgesWon     = prometheus.NewDesc("quarry_broker_hedges_won_total", "Hedged shard requests that answered first.", nil, nil)
	descShardLocal    = prometheus.NewDesc("quarry_broker_shard_requests_local_total", "Shard requests (hedges included) a searcher in the broker's own process answered directly, not through the NATS server.", nil, nil)
	descDictionaries  = prometheus.NewDesc("quarry_broker_stats_dictionaries_total", "Whole dictionaries of fields queries read, counted over every shard for the statistics cache: kept (a new query's terms are then put together with no round trip, even those no document holds), or not kept (over --stats-dictionary-terms, or a shard failed; not asked for again for a minute).", []string{"outcome"}, nil)
	descTeamMemory    = prometheus.NewDesc("quarry_broker_team_search_memory_bytes", "Memory a team's searches in flight hold on this broker, as accounted against --team-max-search-memory (an estimate once a search is planned, its shards' decoded replies once they answer), by team.", []string{"team"}, nil)
	descMemoryLimit   = prometheus.NewDesc("quarry_broker_team_search_memory_limit_bytes", "The most memory one team's searches in flight may hold on this broker (--team-max-search-memory).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInFlight, descInFlightLimit, descShardRequests, descHedges, descHedgesWon, descShardLocal, descDictionaries, descTeamMemory, descMemoryLimit} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	requests, hedges, won := c.b.hedgeStats()
	ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(c.b.admit.Len()+c.b.admit.Running()))
	ch <- prometheus.MustNewConstMetric(descInFlightLimit, prometheus.GaugeValue, float64(c.b.cfg.MaxInFlight))
	ch <- prometheus.MustNewConstMetric(descShardRequests, prometheus.CounterValue, float64(requests))
	ch <- prometheus.MustNewConstMetric(descHedges, prometheus.CounterValue, float64(hedges))
	ch <- prometheus.MustNewConstMetric(descHedgesWon, prometheus.CounterValue, float64(won))
	ch <- prometheus.MustNewConstMetric(descShardLocal, prometheus.CounterValue, float64(c.b.fan.LocalServed()))
	ch <- prometheus.MustNewConstMetric(descDictionaries, prometheus.CounterValue, float64(c.b.dictionariesKept.Load()), "kept")
	ch <- prometheus.MustNewConstMetric(descDictionaries, prometheus.CounterValue, float64(c.b.dictionariesNotKept.Load()), "not_kept")
	ch <- prometheus.MustNewConstMetric(descMemoryLimit, prometheus.GaugeValue, float64(c.b.cfg.TeamMaxSearchMemory))
	c.b.admit.Teams(func(t *admission.Team) {
		if t.Name() != lookupTeam {
			ch <- prometheus.MustNewConstMetric(descTeamMemory, prometheus.GaugeValue, float64(t.Memory.Load()), t.Name())
		}
	})
}
