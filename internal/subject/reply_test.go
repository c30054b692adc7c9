package subject

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestValidReply(t *testing.T) {
	for _, c := range []struct {
		reply string
		ok    bool
	}{
		{"_INBOX.abc.1", true},
		{"_INBOX_food.abc.1", true},
		{"", false},
		{Doc("books", 0, "evil"), false},
		{"$JS.API.STREAM.DELETE." + DocsStream, false},
		{"$KV.quarry-teams.books", false},
		{"quarry.v1.search.menu", false},
		{"_INBOX.*", false},
		{"_INBOX.>", false},
		{"_INBOX.a b", false},
		{"inbox._INBOX", false},
	} {
		if got := ValidReply(c.reply); got != c.ok {
			t.Errorf("ValidReply(%q) = %v, want %v", c.reply, got, c.ok)
		}
	}
}

// A flood of bad replies is dropped, and logged once a second, not once
// each.
func TestReplyGuardLogsOnceASecond(t *testing.T) {
	var log bytes.Buffer
	g := ReplyGuard{Service: "broker", Logger: slog.New(slog.NewTextHandler(&log, nil))}
	for range 1000 {
		if g.Allow("quarry.v1.search.menu", "quarry.v1.docs.books.0.x") {
			t.Fatal("allowed")
		}
	}
	if !g.Allow("quarry.v1.search.menu", "_INBOX.x.1") {
		t.Fatal("an inbox refused")
	}
	if n := strings.Count(log.String(), "request dropped"); n != 1 {
		t.Fatalf("%d log lines:\n%s", n, log.String())
	}
}

func TestTeamReply(t *testing.T) {
	for _, c := range []struct {
		reply, team string
		ok          bool
	}{
		{"_INBOX.abc.1", "food", true},
		{"_INBOX_food.abc.1", "food", true},
		{"_INBOX_books.abc.1", "food", false},
		{"_INBOX_foodie.abc", "food", false},
		{"_INBOX_food", "food", false},
		{"_INBOXfood.x", "food", false},
		{"quarry.v1.docs.books.0.x", "food", false},
		{"_INBOX_index-menu.x", "index-menu", true},
	} {
		if got := TeamReply(c.reply, c.team); got != c.ok {
			t.Errorf("TeamReply(%q, %q) = %v, want %v", c.reply, c.team, got, c.ok)
		}
	}
}
