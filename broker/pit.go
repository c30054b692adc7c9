package broker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nuid"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/planner"
)

// A point in time (api.SearchRequest.PIT) is held by one replica of each
// shard (internal/shard, pit.go); its name, what a response gives the
// caller, says which: the index, the id every shard holds it under, and
// each shard's replica. Names are not secret: an id reaches a point in
// time only on the replicas of the index it was opened on, which the
// caller's permissions to search that index already cover.
type pitName struct {
	Index    string         `json:"index"`
	ID       string         `json:"id"`
	Replicas map[int]string `json:"replicas"`
}

func encodePIT(index string, p *planner.PointInTime) string {
	b, _ := json.Marshal(pitName{Index: index, ID: p.ID, Replicas: p.Replicas})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePIT(s string) (pitName, error) {
	var n pitName
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &n)
	}
	if err == nil {
		err = subject.ValidID("point in time id", n.ID)
	}
	for sh, replica := range n.Replicas {
		if err == nil && (sh < 0 || sh >= api.MaxShards) {
			err = fmt.Errorf("shard %d out of range", sh)
		}
		if err == nil {
			err = subject.ValidID("replica id", replica)
		}
	}
	if err != nil || n.Index == "" {
		return n, api.BadRequest("pit.id is not the name of a point in time (a search response's \"pit\")")
	}
	return n, nil
}

// pointInTime opens the point in time the request asks for, or finds the
// one it names, and makes it the plan's.
func (r *run) pointInTime(ctx context.Context) error {
	want := r.req.PIT
	if want == nil {
		return nil
	}
	keep := want.KeepAliveDuration()
	if want.ID == "" {
		pit, err := r.b.fan.OpenPIT(ctx, r.plan, nuid.Next(), keep)
		if err != nil {
			return r.b.public(ctx, err, "index", r.plan.Index)
		}
		r.plan.PIT = pit
		return nil
	}
	n, err := decodePIT(want.ID)
	if err != nil {
		return err
	}
	if n.Index != r.plan.Index {
		return api.BadRequest("pit.id names a point in time of index %q, not of %q", n.Index, r.plan.Index)
	}
	r.plan.PIT = &planner.PointInTime{ID: n.ID, KeepAlive: keep, Replicas: n.Replicas}
	return nil
}
