package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/backoff"
)

// Roles start in any order, at any time: on a JetStream cluster that is
// still electing its meta leader, or whose members are catching up, making
// a stream or a bucket fails for a while, and every role (and a CLI
// command that creates resources) must wait for it rather than fail, or
// hang until its timeout without saying why. Creating is idempotent, so
// roles racing to create one resource converge on it.

// attemptTimeout bounds one try: a request JetStream does not answer while
// it has no leader is tried again, not waited on for the whole start-up.
// A resource's first try gets firstAttempt, each next one twice the last
// up to attemptTimeout: JetStream answers neither of two creations of one
// stream at once (two `quarry init`s), though it makes the stream, and a
// try again a second later finds it (TestDeployCluster: each such
// meeting cost both 5 s, and they met three or four times).
const (
	firstAttempt   = time.Second
	attemptTimeout = 5 * time.Second
)

// untilReady runs create until it succeeds, fails with an error waiting
// cannot fix, or ctx is done. It logs once what it is waiting for.
func untilReady(ctx context.Context, log *slog.Logger, what string, create func(context.Context) error) error {
	pause := backoff.New(50*time.Millisecond, 2*time.Second)
	attempt := backoff.New(firstAttempt, attemptTimeout)
	waiting := time.Now()
	logged := false
	for {
		actx, cancel := context.WithTimeout(ctx, attempt.Next())
		err := create(actx)
		cancel()
		if err == nil {
			if logged {
				log.Info("JetStream is ready", "resource", what, "waited", time.Since(waiting).Round(time.Millisecond))
			}
			return nil
		}
		if !transient(err) || ctx.Err() != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: JetStream was not ready within the start-up time: %w", what, err)
			}
			return err
		}
		if !logged {
			log.Warn("waiting for JetStream (a cluster electing its leader, or catching up)", "resource", what, "err", err)
			logged = true
		}
		if pause.Wait(ctx) != nil {
			return fmt.Errorf("%s: JetStream was not ready within the start-up time: %w", what, err)
		}
	}
}

// JetStream error codes that mean "not now" rather than "no".
const (
	errCodeClusterNotAvail  = 10008 // JetStream system temporarily unavailable
	errCodeClusterNoPeers   = 10005 // insufficient resources (members not up yet)
	errCodeClusterNotLeader = 10009 // not the leader
	errCodeClusterNotActive = 10006 // JetStream not in clustered mode yet
)

// transient reports whether err may go away by waiting.
func transient(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeClusterNotAvail, errCodeClusterNoPeers, errCodeClusterNotLeader, errCodeClusterNotActive:
			return true
		}
		return apiErr.Code == 503 || apiErr.Code == 408
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrNoServers)
}
