// Package gather asks a question on NATS that any number of roles may
// answer (every searcher's status, every broker's pipelines, every replica
// of a shard) and takes the answers that come within a wait: the one
// scatter-gather of answers of unknown number.
package gather

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// Replies publishes data on subj as a request every role listening may
// answer (a searcher's status, a broker's pipelines), and calls each
// with every reply that comes within wait, in order of arrival, until
// wait has passed or ctx ends. It returns an error only if the request
// could not be sent; a reply each cannot use it skips.
//
// The services' discovery, the registry's status pages and reports and
// the client's views of the roles use it.
func Replies(ctx context.Context, nc *nats.Conn, subj string, data []byte, wait time.Duration, each func(*nats.Msg)) error {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subj, inbox, data); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil // the wait is over
		}
		each(m)
	}
}
