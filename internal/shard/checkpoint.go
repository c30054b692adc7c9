package shard

import (
	"context"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/collector"
)

// Checkpoint is called by a search at regular points of its work: every
// CheckpointEvery hits it collects and every CheckpointEvery documents
// whose stored fields it loads. It may wait (a heavy team's search giving
// its core to other teams' searches) or stop the search by returning an
// error. It runs on the search's goroutine and must be cheap when it does
// neither.
type Checkpoint func(ctx context.Context) error

// CheckpointEvery is how many hits (or loaded documents) a search handles
// between two calls of its Checkpoint: a few hundred microseconds of the
// most expensive searches (a disjunction of hundreds of terms costs some
// 30 µs a hit), so a wait starts soon after it is asked for.
const CheckpointEvery = 16

type checkpointKey struct{}

// WithCheckpoint returns a context under which Replica.Search calls cp at
// its checkpoints. bleve's collector calls the handler of every hit it
// collects (search.MakeDocumentMatchHandlerKey); the one installed here is
// bleve's own top-N handler with cp called every CheckpointEvery hits.
func WithCheckpoint(ctx context.Context, cp Checkpoint) context.Context {
	if cp == nil {
		return ctx
	}
	ctx = context.WithValue(ctx, checkpointKey{}, cp)
	return context.WithValue(ctx, search.MakeDocumentMatchHandlerKey, search.MakeDocumentMatchHandler(func(sctx *search.SearchContext) (search.DocumentMatchHandler, bool, error) {
		next, loadID, err := collector.MakeTopNDocumentMatchHandler(sctx)
		if err != nil {
			return nil, false, err
		}
		n := 0
		return func(d *search.DocumentMatch) error {
			if n++; n%CheckpointEvery == 0 {
				if err := cp(ctx); err != nil {
					return err
				}
			}
			return next(d)
		}, loadID, nil
	}))
}

// checkpointOf is ctx's Checkpoint, or nil.
func checkpointOf(ctx context.Context) Checkpoint {
	cp, _ := ctx.Value(checkpointKey{}).(Checkpoint)
	return cp
}

type panicKey struct{}

// WithInjectedPanic makes the shard search run with ctx panic while it
// holds its replica: fault injection, for tests of the searcher's
// recovery (searcher.Config.FaultPanic).
func WithInjectedPanic(ctx context.Context) context.Context {
	return context.WithValue(ctx, panicKey{}, true)
}

func panicInjected(ctx context.Context) bool {
	b, _ := ctx.Value(panicKey{}).(bool)
	return b
}
