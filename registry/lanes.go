package registry

import (
	"context"
	"sync"

	"github.com/quarrysearch/quarry/api"
)

// teamAdminWaiting is how many admin requests of one team may wait for
// its lane; more are refused as overloaded.
const teamAdminWaiting = 16

// lanes run admin requests, each team's one at a time and different
// teams' at once: one team's slow validation, activation or gate never
// delays another team's admin call.
type lanes struct {
	waiting int // per team, beside the one running
	wg      sync.WaitGroup

	mu     sync.Mutex
	byTeam map[laneKey]*lane
}

// laneKey names a lane: a team's, or its lane of quick reads (readOps),
// which do not wait behind its pushes and gates.
type laneKey struct {
	team  string
	reads bool
}

type lane struct {
	turn  chan struct{} // a token while a request of the team runs
	queue int           // requests holding or waiting for the turn (l.mu)
}

// run runs fn in a goroutine of team's lane (its reads' with reads) once
// the lane's earlier requests are done, or refuses at once when too many
// wait. If ctx ends while fn waits for its turn, fn is not run: expired
// gets the error to answer.
func (l *lanes) run(ctx context.Context, team string, reads bool, fn func(context.Context), expired func(error)) error {
	key := laneKey{team, reads}
	l.mu.Lock()
	if l.byTeam == nil {
		l.byTeam = map[laneKey]*lane{}
	}
	ln := l.byTeam[key]
	if ln == nil {
		ln = &lane{turn: make(chan struct{}, 1)}
		l.byTeam[key] = ln
	}
	if ln.queue > l.waiting {
		l.mu.Unlock()
		return api.Errorf(api.CodeOverloaded, "team %s has %d admin requests waiting, the most there may be; try again when they are done", team, l.waiting)
	}
	ln.queue++
	l.mu.Unlock()
	l.wg.Go(func() {
		defer l.leave(key, ln)
		select {
		case ln.turn <- struct{}{}:
			defer func() { <-ln.turn }()
		case <-ctx.Done():
			expired(api.Errorf(api.CodeTimeout, "this admin request waited for team %s's earlier ones until its deadline", team))
			return
		}
		fn(ctx)
	})
	return nil
}

// leave takes a request off its lane, and drops an idle lane.
func (l *lanes) leave(key laneKey, ln *lane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ln.queue--; ln.queue == 0 {
		delete(l.byTeam, key)
	}
}
