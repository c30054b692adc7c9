package httpapi

import (
	"log/slog"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/quarrysearch/quarry/api"
)

// Metrics serves the metrics g gathers in the Prometheus text format (GET
// /metrics). A collector that fails is logged and left out; the rest are
// served. A client that hangs up before the page is sent is no error of
// the server's: it is logged at debug level, once.
func Metrics(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &clientWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		if cw.err != nil {
			log.Debug("metrics: the client went away before the page was sent", "remote", r.RemoteAddr, "err", cw.err)
		}
	})
}

// GuardedMetrics is Metrics behind guard (nil: Metrics itself): an
// operator's token gets every series; a team's token of scope admin only
// the series labelled with one of its indexes (index="…") or with its
// team (team="…"), so the page tells a team nothing of another team's
// indexes, plugins or traffic; a team's token of a narrower scope (a key
// a browser may hold) gets 403; no token, or an unknown one, gets 401.
func GuardedMetrics(g prometheus.Gatherer, log *slog.Logger, guard *Guard) http.Handler {
	if guard == nil {
		return Metrics(g, log)
	}
	all := Metrics(g, log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := guard.check(r, metricsAccess); err != nil {
			(&handler{log: log}).fail(w, err)
			return
		}
		who := guard.identity(r)
		if who.Operator {
			all.ServeHTTP(w, r)
			return
		}
		Metrics(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			mfs, err := g.Gather()
			return teamSeries(mfs, who.Team, who.Indexes), err
		}), log).ServeHTTP(w, r)
	})
}

// metricsAccess is who may read GET /metrics: any token, but a team's of
// scope admin only (what the page tells, of plugins and traffic, is an
// admin's, as GET …/info and …/queries are).
var metricsAccess = access{who: knownToken, scope: api.ScopeAdmin}

// teamSeries keeps the series of mfs labelled with one of indexes or with
// team, and the families left with any.
func teamSeries(mfs []*dto.MetricFamily, team string, indexes []string) []*dto.MetricFamily {
	out := mfs[:0]
	for _, mf := range mfs {
		kept := mf.Metric[:0]
		for _, m := range mf.Metric {
			if teamOwns(m, team, indexes) {
				kept = append(kept, m)
			}
		}
		if len(kept) > 0 {
			mf.Metric = kept
			out = append(out, mf)
		}
	}
	return out
}

func teamOwns(m *dto.Metric, team string, indexes []string) bool {
	for _, l := range m.GetLabel() {
		switch l.GetName() {
		case "index":
			return slices.Contains(indexes, l.GetValue())
		case "team":
			return team != "" && l.GetValue() == team
		}
	}
	return false
}

// clientWriter keeps the first error writing the response (the client
// hung up) from promhttp, which would log one ERROR line for every metric
// family still to come; the writes after it are dropped.
type clientWriter struct {
	http.ResponseWriter
	err error
}

func (w *clientWriter) Write(p []byte) (int, error) {
	if w.err == nil {
		_, w.err = w.ResponseWriter.Write(p)
	}
	return len(p), nil
}

// Unwrap gives http.ResponseController the connection's own writer.
func (w *clientWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
