// Package backoff paces the attempts of a retry loop: a pause that
// doubles from a first one up to a longest, cut short when the context
// ends. It is the one backoff of Quarry's retry loops (a searcher loading
// a generation, a JetStream consumer made again, a role waiting for its
// resources or for JetStream).
package backoff

import (
	"context"
	"time"
)

// Backoff is one retry loop's pauses. The zero value is not useful: set
// First and Max.
type Backoff struct {
	// First is the first pause; each next one is twice the last, at most
	// Max.
	First, Max time.Duration
	next       time.Duration
}

// New returns a Backoff pausing first, then twice as long each time, up
// to max.
func New(first, max time.Duration) *Backoff { return &Backoff{First: first, Max: max} }

// Wait pauses for the next pause, or until ctx ends, whose error it then
// returns.
func (b *Backoff) Wait(ctx context.Context) error {
	d := b.Next()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Next is the next pause, and moves on.
func (b *Backoff) Next() time.Duration {
	if b.next == 0 {
		b.next = b.First
	}
	d := b.next
	b.next = min(2*b.next, b.Max)
	return d
}
