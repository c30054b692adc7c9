package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/tracenats"
	"github.com/spf13/cobra"
)

// natsFlags are the connection flags every networked command takes.
type natsFlags struct {
	url, user, password, token, creds, nkey string
	tlsCA, tlsCert, tlsKey                  string
	inboxPrefix                             string
	timeout                                 time.Duration
}

// register adds the flags to fs, their defaults read with getenv: the
// root's persistent flags, every command's.
func (f *natsFlags) register(fs *pflag.FlagSet, getenv func(string) string) {
	fs.StringVar(&f.url, "nats", cmp.Or(getenv("QUARRY_NATS"), "nats://127.0.0.1:4222"), "NATS server URL(s), comma-separated (env QUARRY_NATS)")
	fs.StringVar(&f.user, "user", "", "NATS user")
	fs.StringVar(&f.password, "password", getenv("QUARRY_NATS_PASSWORD"), "NATS password (env QUARRY_NATS_PASSWORD)")
	fs.StringVar(&f.token, "token", getenv("QUARRY_NATS_TOKEN"), "NATS auth token (env QUARRY_NATS_TOKEN)")
	fs.StringVar(&f.creds, "creds", "", "NATS credentials file")
	fs.StringVar(&f.nkey, "nkey", "", "NATS nkey seed file")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "CA certificate to verify the NATS server")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "client certificate for NATS TLS")
	fs.StringVar(&f.tlsKey, "tls-key", "", "client key for NATS TLS")
	fs.StringVar(&f.inboxPrefix, "inbox-prefix", getenv("QUARRY_INBOX_PREFIX"), "subject prefix of reply inboxes, for NATS users allowed to subscribe only under it, starting with _INBOX, e.g. _INBOX_teama (env QUARRY_INBOX_PREFIX)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for NATS and for answers")
}

// options turns the flags into connection options.
func (f *natsFlags) options() ([]nats.Option, error) {
	opts := []nats.Option{nats.Timeout(f.timeout), nats.ErrorHandler(asyncError)}
	if f.user != "" {
		opts = append(opts, nats.UserInfo(f.user, f.password))
	}
	if f.token != "" {
		opts = append(opts, nats.Token(f.token))
	}
	if f.creds != "" {
		opts = append(opts, nats.UserCredentials(f.creds))
	}
	if f.nkey != "" {
		o, err := nats.NkeyOptionFromSeed(f.nkey)
		if err != nil {
			return nil, fmt.Errorf("nkey %s: %w", f.nkey, err)
		}
		opts = append(opts, o)
	}
	if f.inboxPrefix != "" {
		if !strings.HasPrefix(f.inboxPrefix, subject.InboxPrefix) {
			// Quarry's services answer only inboxes (subject.ValidReply):
			// every request would go unanswered.
			return nil, api.BadRequest("--inbox-prefix %q: Quarry answers only reply subjects starting with %s, e.g. %s_teama (docs/teams.md)", f.inboxPrefix, subject.InboxPrefix, subject.InboxPrefix)
		}
		opts = append(opts, nats.CustomInboxPrefix(f.inboxPrefix))
	}
	if f.tlsCA != "" {
		opts = append(opts, nats.RootCAs(f.tlsCA))
	}
	if f.tlsCert != "" || f.tlsKey != "" {
		opts = append(opts, nats.ClientCert(f.tlsCert, f.tlsKey))
	}
	return opts, nil
}

// asyncError reports an error the connection found on its own, as
// nats.go's default handler does, but not a permission violation: the
// request that hit it fails and says so, naming the subject and the
// likely reason (docs/teams.md), and the raw line came first, twice.
func asyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	fmt.Fprintf(os.Stderr, "quarry: NATS: %v\n", err)
}

// connect opens a NATS connection and a client on it.
func (f *natsFlags) connect(ctx context.Context) (*nats.Conn, *client.Client, error) {
	opts, err := f.options()
	if err != nil {
		return nil, nil, err
	}
	nc, err := nats.Connect(f.url, append(opts, nats.Name("quarry-cli"))...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS at %s: %w (is `quarry serve` running? One on another port: --nats URL or QUARRY_NATS)", f.url, err)
	}
	c, err := client.New(ctx, nc, client.Options{RequestTimeout: f.timeout, Propagate: tracenats.Propagate})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, c, nil
}

// clientRun is the RunE of a command that uses a deployment: it connects
// with nf, runs run with the command's context, the client and the
// positional arguments, and closes the connection.
func clientRun(nf *natsFlags, run func(ctx context.Context, c *client.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		return run(ctx, c, args)
	}
}
