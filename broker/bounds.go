package broker

import (
	"encoding/json"
	"fmt"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
)

// A search's size is bounded while it is built, not after:
//
//   - explain beyond a small page is refused before anything runs
//     (planner.Config.MaxExplain, Config.MaxExplain);
//   - each shard stops building its reply past the searcher's bound
//     (wire.ShardRequest.MaxReplyBytes);
//   - the broker stops cutting the page once the response (its facets
//     and profile, then hit by hit with fields and explanations) passes
//     Config.MaxResponseBytes (responseBudget), before it is encoded;
//   - a team's searches in flight hold at most Config.TeamMaxSearchMemory
//     on the broker (run.account): an estimate once a search is planned,
//     what its shards' replies came to once they are decoded.

// Bounds whose refusals quarry_broker_bound_refusals_total counts, by
// its bound label.
const (
	boundExplain       = iota // explain over --max-explain
	boundResponseBytes        // a response over --max-response-bytes
	boundTeamMemory           // a team over --team-max-search-memory
	numBounds
)

var boundNames = [numBounds]string{"max_explain", "max_response_bytes", "team_max_search_memory"}

// What the broker's memory account counts per hit: hitMemory for its
// api.Hit (in its shard's decoded reply, and again in the merge) besides
// its id and payload; at planning, before the payload is known,
// fieldsGuess when the search asks for fields and explainGuess when it
// asks to explain (the catalogue's documents are 350 bytes, an
// explanation of a few terms over a few fields 3 KB). A search is also
// accounted searchMemory for what does not grow with its hits.
const (
	hitMemory    = 256
	fieldsGuess  = 1 << 10
	explainGuess = 4 << 10
	searchMemory = 16 << 10
)

// checkExplain refuses a request that asks to explain more hits than
// Config.MaxExplain (planner.Planner.CheckExplain), and counts the
// refusal.
func (b *Broker) checkExplain(req *api.SearchRequest) error {
	err := b.planner.CheckExplain(req)
	if err != nil {
		b.metrics.bound(boundExplain)
	}
	return err
}

// responseCap is the most a response may hold: Config.MaxResponseBytes,
// at most what one reply carries on the broker's connection.
func (b *Broker) responseCap() int {
	room := wire.ReplyRoom(b.nc)
	if b.cfg.MaxResponseBytes > 0 {
		return min(room, b.cfg.MaxResponseBytes)
	}
	return room
}

// estimate is what the planned search is accounted before its shards
// answer: per shard its K hits, their payload held to what one shard
// reply may carry; the response, held to responseCap.
func (r *run) estimate() int64 {
	p := r.plan
	payload := 0
	if len(p.Fields) > 0 {
		payload += fieldsGuess
	}
	if r.sreq.Explain {
		payload += explainGuess
	}
	room := int64(wire.ReplyRoom(r.b.nc))
	k := int64(p.K) // what a shard may return, a second round's included
	perShard := k*hitMemory + min(k*int64(payload+32), room)
	response := min(int64(p.Size)*int64(payload+64), int64(r.b.responseCap()))
	return searchMemory + int64(len(p.Shards))*perShard + response
}

// counted is what the search is accounted once its shards' replies are
// decoded: each hit's api.Hit, id, sort keys and payload (replyBytes,
// summed by collect), and its response, held to responseCap, at the
// replies' mean payload per hit.
func (r *run) counted() int64 {
	hits := 0
	for _, s := range r.good {
		hits += len(s.Hits)
	}
	response := int64(0)
	if hits > 0 {
		perHit := (r.replyBytes - int64(hits)*hitMemory) / int64(hits)
		response = min(int64(r.plan.Size)*(perHit+64), int64(r.b.responseCap()))
	}
	return searchMemory + r.replyBytes + response
}

// hitBytes is about what a decoded hit holds: its api.Hit, id, sort
// keys and fields (as JSON, or decoded).
func hitBytes(h *api.Hit) int64 {
	n := hitMemory + len(h.ID) + len(h.FieldsJSON)
	for _, k := range h.SortKeys {
		n += len(k) + 16
	}
	if h.Fields != nil {
		n += valueBytes(h.Fields, 0)
	}
	return int64(n)
}

// valueBytes is about the JSON length of a decoded value. Past a depth
// no document reaches, values count as 8 bytes.
func valueBytes(v any, depth int) int {
	if depth > 64 {
		return 8
	}
	switch v := v.(type) {
	case string:
		return len(v) + 2
	case map[string]any:
		n := 2
		for k, e := range v {
			n += len(k) + 4 + valueBytes(e, depth+1)
		}
		return n
	case []any:
		n := 2
		for _, e := range v {
			n += 1 + valueBytes(e, depth+1)
		}
		return n
	case json.RawMessage:
		return len(v)
	}
	return 8
}

// account sets what the run holds of its team's search memory to n
// bytes, taking the difference from the team's account, and refuses
// (429 overloaded, naming the limit) when more would take the team over
// Config.TeamMaxSearchMemory; what holds how much says which. The run
// gives it all back with releaseMemory.
func (r *run) account(n int64, what string) error {
	if r.memTeam == nil {
		r.memTeam = r.b.admit.Team(r.def.TeamOf())
	}
	delta := n - r.memHeld
	total := r.memTeam.Memory.Add(delta)
	if limit := r.b.cfg.TeamMaxSearchMemory; delta > 0 && total > limit {
		r.memTeam.Memory.Add(-delta)
		r.b.metrics.bound(boundTeamMemory)
		return &api.Error{Code: api.CodeOverloaded, RetryAfterMS: 100,
			Message: fmt.Sprintf("team %s's searches in flight on this broker would hold %s of memory with this one's %s (%s), over the team's limit of %s (the broker's --team-max-search-memory); try again, or ask for fewer hits or fields",
				r.memTeam.Name(), mib(total), mib(n), what, mib(limit))}
	}
	r.memHeld = n
	return nil
}

// releaseMemory gives back what the run holds of its team's search
// memory.
func (r *run) releaseMemory() {
	if r.memTeam != nil && r.memHeld != 0 {
		r.memTeam.Memory.Add(-r.memHeld)
		r.memHeld = 0
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// responseBudget counts a response's bytes as its page is cut, against
// responseCap, before it is encoded.
type responseBudget struct {
	max, used int
}

// take counts n bytes more, and reports whether they are within the
// bound.
func (b *responseBudget) take(n int) bool {
	b.used += n
	return b.used <= b.max
}

// responseTooLarge is the error of a response whose hit at (of hits on
// the page) took it over its budget.
func (r *run) responseTooLarge(at, hits, max int) error {
	r.b.metrics.bound(boundResponseBytes)
	return &api.Error{Code: api.CodeResponseTooLarge, Message: fmt.Sprintf("response too large: the response comes to more than %d bytes by hit %d of %d "+
		"(its hits' ids, fields and explanations and its profile, counted before it is encoded), the most one response may hold "+
		"(the broker's --max-response-bytes, at most the NATS server's max_payload less 4 KiB); ask for fewer hits (size), fewer fields or no explain", max, at, hits)}
}

// facetBytes is about what facets take in the response.
func facetBytes(facets map[string]api.FacetResult) int {
	n := 0
	for name, f := range facets {
		n += 64 + len(name) + len(f.Field)
		for _, t := range f.Terms {
			n += 24 + len(t.Term)
		}
		for _, r := range f.Ranges {
			n += 64 + len(r.Name)
		}
	}
	return n
}

// profileBytes is about what the profile's stages take in the response.
func profileBytes(stages []api.Stage) int {
	n := 0
	for _, s := range stages {
		n += 48 + len(s.Name) + len(s.Detail)
	}
	return n
}
