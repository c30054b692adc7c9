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

// TeamReply reports whether a request on an index of team may be
// answered at reply: a valid inbox (ValidReply) that is nats.go's default
// (_INBOX.…, an operator's or a client's without a prefix of its own) or
// the team's own (_INBOX_<team>.…, docs/teams.md). Only the team (and
// operators) may send requests on its index's subjects, so a request
// whose reply names another team's inbox (_INBOX_books.… on a food index)
// aims the answer at a team that did not ask for it.
func TeamReply(reply, team string) bool {
	if !ValidReply(reply) {
		return false
	}
	rest := reply[len(InboxPrefix):]
	return strings.HasPrefix(rest, ".") || (strings.HasPrefix(rest, "_"+team) && strings.HasPrefix(rest[1+len(team):], "."))
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
	g.drop(subj, reply, "request dropped: its reply subject is not an inbox", "replies go only to subjects starting with "+InboxPrefix+" (docs/teams.md)")
	return false
}

// AllowTeam is Allow for a request on an index of team: the reply must be
// the default inbox or the team's own (TeamReply).
func (g *ReplyGuard) AllowTeam(subj, reply, team string) bool {
	if TeamReply(reply, team) {
		return true
	}
	g.drop(subj, reply, "request dropped: its reply subject is another team's inbox", "replies to a request on an index of team "+team+" go to "+InboxPrefix+".… or "+InboxPrefix+"_"+team+".… (docs/teams.md)")
	return false
}

// drop counts a dropped request and logs it, at most once a second.
func (g *ReplyGuard) drop(subj, reply, msg, note string) {
	n := g.dropped.Add(1)
	now, last := time.Now().UnixNano(), g.logged.Load()
	if now-last >= int64(time.Second) && g.logged.CompareAndSwap(last, now) {
		g.Logger.Warn(msg, "service", g.Service, "subject", subj, "reply", reply, "dropped_so_far", n, "note", note)
	}
}
