package subject

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"time"
)

// InboxPrefix starts every reply subject Quarry's services answer:
// nats.go's default inboxes (_INBOX.…) and the per-team prefixes
// docs/teams.md gives (_INBOX_food.…).
const InboxPrefix = "_INBOX"

// ValidReply reports whether a request's reply subject may be answered:
// an inbox, without wildcards. A service answers with its own NATS
// permissions, which reach every stream and bucket; a reply to any
// subject a requester names would let a team that may only search write
// wherever Quarry can: a search sent with the reply subject
// quarry.v1.docs.<another team's index>.0.x stored the broker's answer as
// a document of that index.
func ValidReply(reply string) bool {
	return strings.HasPrefix(reply, InboxPrefix) && !strings.ContainsAny(reply, "*> \t\r\n")
}

// ReplyGuard drops requests whose reply subject ValidReply refuses, and
// says so in the log at most once a second (a flood of them must not
// flood the log too), with how many were dropped. The zero value with a
// Logger set is ready.
type ReplyGuard struct {
	// Service names the service in the log line.
	Service string
	Logger  *slog.Logger
	dropped atomic.Int64
	logged  atomic.Int64 // unix nanoseconds of the last log line
}

// Allow reports whether the request on subj with reply subject reply may
// be answered; if not, it is counted and dropped.
func (g *ReplyGuard) Allow(subj, reply string) bool {
	if ValidReply(reply) {
		return true
	}
	n := g.dropped.Add(1)
	now, last := time.Now().UnixNano(), g.logged.Load()
	if now-last >= int64(time.Second) && g.logged.CompareAndSwap(last, now) {
		g.Logger.Warn("request dropped: its reply subject is not an inbox", "service", g.Service, "subject", subj, "reply", reply,
			"dropped_so_far", n, "note", "replies go only to subjects starting with "+InboxPrefix+" (docs/teams.md)")
	}
	return false
}
