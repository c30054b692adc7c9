package broker

import (
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
)

// Sizes of each index's query log on a broker.
const (
	queryLogSize = 1000 // last searches
	slowLogSize  = 20   // last slow searches, with their stages
	queryLogText = 200  // bytes of a query's text kept
)

// queryLog keeps, per index, the broker's last searches and its last slow
// ones: what the console's Traffic page reads (top and zero-result
// queries, slow queries with their stages) through the admin API.
// Recording a search copies a few words into a ring under the index's own
// mutex (searches of different indexes do not wait for each other); a
// slow one also keeps its stage times.
type queryLog struct {
	indexes sync.Map // index name → *indexQueries
}

type indexQueries struct {
	mu     sync.Mutex
	recent ring
	slow   ring
}

// ring is a fixed ring of logged queries.
type ring struct {
	items []api.LoggedQuery
	next  int
	full  bool
}

func (r *ring) add(q api.LoggedQuery, size int) {
	if r.items == nil {
		r.items = make([]api.LoggedQuery, size)
	}
	r.items[r.next] = q
	r.next = (r.next + 1) % size
	r.full = r.full || r.next == 0
}

// list is the ring's queries, oldest first.
func (r *ring) list() []api.LoggedQuery {
	if !r.full {
		return append([]api.LoggedQuery{}, r.items[:r.next]...)
	}
	return append(append([]api.LoggedQuery{}, r.items[r.next:]...), r.items[:r.next]...)
}

// queryText is what the log keeps of a request's text.
func queryText(req *api.SearchRequest) string {
	if len(req.Query) > 0 {
		return "query: " + clip(req.Query, queryLogText)
	}
	return clip(req.Q, queryLogText)
}

// clip is text cut to at most n bytes, on a character's boundary, with
// "…" when cut; only what is kept is copied.
func clip[T ~string | ~[]byte](text T, n int) string {
	if len(text) <= n {
		return string(text)
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return string(text[:n]) + "…"
}

// add records one answered search; times, for a slow one, its stages.
func (l *queryLog) add(index string, req *api.SearchRequest, total uint64, took time.Duration, times *stageTimes) {
	q := api.LoggedQuery{Q: queryText(req), Total: total, TookMS: ms(took), Time: time.Now().UTC()}
	var slow api.LoggedQuery
	if times != nil {
		slow = q
		for i, d := range times {
			if d > 0 {
				slow.Stages = append(slow.Stages, api.Stage{Name: stageNames[i], TookMS: ms(d)})
			}
		}
	}
	v, ok := l.indexes.Load(index)
	if !ok {
		v, _ = l.indexes.LoadOrStore(index, &indexQueries{})
	}
	iq := v.(*indexQueries)
	iq.mu.Lock()
	defer iq.mu.Unlock()
	iq.recent.add(q, queryLogSize)
	if times != nil {
		iq.slow.add(slow, slowLogSize)
	}
}

// of returns the log of one index.
func (l *queryLog) of(index string) (recent, slow []api.LoggedQuery) {
	v, ok := l.indexes.Load(index)
	if !ok {
		return []api.LoggedQuery{}, []api.LoggedQuery{}
	}
	iq := v.(*indexQueries)
	iq.mu.Lock()
	defer iq.mu.Unlock()
	return iq.recent.list(), iq.slow.list()
}

// forget drops a deleted index's log.
func (l *queryLog) forget(index string) {
	l.indexes.Delete(index)
}

// Queries returns the broker's query log of an index.
func (b *Broker) Queries(index string) api.BrokerQueries {
	recent, slow := b.queries.of(index)
	return api.BrokerQueries{Broker: b.id, Index: index, Recent: recent, Slow: slow}
}

// answerQueries answers subject.BrokerQueries requests: the body names
// the index.
func (b *Broker) answerQueries(m *nats.Msg) {
	if !b.replies.Allow(m.Subject, m.Reply) {
		return
	}
	raw, err := json.Marshal(b.Queries(string(m.Data)))
	if err == nil {
		err = m.Respond(raw)
	}
	if err != nil {
		b.cfg.Logger.Warn("answer query log", "err", err)
	}
}
