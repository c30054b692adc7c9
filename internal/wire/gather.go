package wire

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// Gather publishes data on subj as a request every role listening may
// answer (a searcher's status, a broker's pipelines), and calls each
// with every reply that comes within wait, in order of arrival, until
// wait has passed or ctx ends. It returns an error only if the request
// could not be sent; a reply each cannot use it skips.
//
// It is the one scatter-gather of answers of unknown number: the
// services' discovery, the registry's status pages and reports, the
// client's views of the roles.
func Gather(ctx context.Context, nc *nats.Conn, subj string, data []byte, wait time.Duration, each func(*nats.Msg)) error {
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
