package shard

import (
	"errors"
	"fmt"

	"github.com/blevesearch/bleve/v2/search"

	"github.com/quarrysearch/quarry/api"
)

// errReplyTooLarge is a reply budget's error past its bound
// (wire.ShardRequest.MaxReplyBytes).
var errReplyTooLarge = errors.New("reply over the bound")

// replyTooLarge turns errReplyTooLarge into the API's
// response_too_large, and returns nil for any other error.
func replyTooLarge(err error, shard, max int) error {
	if !errors.Is(err, errReplyTooLarge) {
		return nil
	}
	return &api.Error{Code: api.CodeResponseTooLarge, Message: fmt.Sprintf("response too large: shard %d's reply comes to more than %d bytes "+
		"(its hits' ids, stored fields and explanations, counted as they are added), the most one shard reply may hold "+
		"(the searcher's --max-shard-reply-bytes, at most the NATS server's max_payload less 4 KiB); ask for fewer hits (size), fewer fields or no explain", shard, max)}
}

// replyBudget counts the bytes of the reply one search builds against
// its bound (wire.ShardRequest.MaxReplyBytes): each hit's id and sort
// keys, its explanation, its stored fields as they load. It is an
// estimate of what the reply holds, not of its encoding: a reply is
// compressed on the wire, and is held decoded by the broker.
type replyBudget struct {
	max, used int // max 0: no bound
}

// take counts n bytes more, and reports whether they are within the
// bound.
func (b *replyBudget) take(n int) bool {
	b.used += n
	return !b.over()
}

func (b *replyBudget) over() bool { return b.max > 0 && b.used > b.max }

// hitOverhead is about what a hit takes in a reply besides its id, sort
// keys, fields and explanation: its score, its lengths and counts.
const hitOverhead = 24

// takeHits counts hits' ids, sort keys and explanations, hit by hit,
// and stops with errReplyTooLarge at the first that goes over the bound.
func (b *replyBudget) takeHits(hits []*search.DocumentMatch) error {
	for _, h := range hits {
		n := hitOverhead + len(h.ID)
		for _, k := range h.Sort {
			n += len(k) + 2
		}
		if h.Expl != nil {
			n += explanationBytes(h.Expl, 0)
		}
		if !b.take(n) {
			return errReplyTooLarge
		}
	}
	return nil
}

// explanationBytes is about the length of an explanation's JSON:
// {"value":…,"message":…,"children":[…]} per node. Past a depth no
// query reaches, nodes are not walked (each counts as a leaf).
func explanationBytes(e *search.Explanation, depth int) int {
	n := 48 + len(e.Message)
	if depth > 256 {
		return n
	}
	for _, c := range e.Children {
		if c != nil {
			n += explanationBytes(c, depth+1)
		}
	}
	return n
}
