package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// foodLogs is TestTeamIsolation's part on plugin logs: team food reads
// the lines its logger plugin wrote (the log import and stdout, each with
// the request id of its search) and follows new ones live on its subject;
// team books cannot subscribe to food's subject nor read the stream that
// keeps the lines (the admin API's plugin.logs is refused to it with the
// rest of food's admin subjects).
func foodLogs(t *testing.T, ctx context.Context, n *Node, food, books *client.Client) {
	t.Helper()
	searched, err := food.Search(ctx, "menu", &api.SearchRequest{Q: "logged"})
	if err != nil || searched.RequestID == "" {
		t.Fatalf("food searches: %+v %v", searched, err)
	}
	var logs *api.PluginLogs
	testwait.UntilErr(t, 10*time.Second, "the lines of food's search kept", func() error {
		logs, err = food.PluginLogs(ctx, "menu", "logger", api.PluginLogsRequest{Limit: 1000})
		if err != nil {
			t.Fatalf("food reads its plugin's logs: %v", err)
		}
		if len(logs.Lines) >= 2 && logs.Lines[len(logs.Lines)-1].RequestID == searched.RequestID {
			return nil
		}
		return fmt.Errorf("%d lines: %+v", len(logs.Lines), logs.Lines[max(0, len(logs.Lines)-2):])
	})
	sources := map[string]bool{}
	for _, l := range logs.Lines {
		if l.Team != "food" || l.Plugin != "logger" || l.Version == "" || l.Time.IsZero() || l.Level != "info" {
			t.Fatalf("line %+v: want food's logger, its version, level and time", l)
		}
		if l.RequestID == searched.RequestID {
			sources[l.Source] = true
		}
	}
	if !sources["log"] || !sources["stdout"] || logs.Subject != "quarry.v1.logs.food.logger" {
		t.Fatalf("food's logs: %+v, want lines of the log import and of stdout with the request id %s on quarry.v1.logs.food.logger", logs, searched.RequestID)
	}

	// Following: a new search's lines arrive live. The follow hands the
	// kept lines it is asked for (from the last one read) once it has
	// subscribed: after that one, lines are heard live. Its context has
	// no deadline, as the CLI's (`plugin logs --follow`, until Ctrl-C).
	fctx, stop := context.WithCancel(context.Background())
	defer stop()
	live := make(chan api.PluginLogLine, 64)
	followed := make(chan error, 1)
	last := logs.Lines[len(logs.Lines)-1]
	go func() {
		followed <- food.FollowPluginLogs(fctx, "menu", "logger", api.PluginLogsRequest{After: last.Seq - 1}, func(l api.PluginLogLine) error {
			live <- l
			return nil
		})
	}()
	next := func() api.PluginLogLine {
		t.Helper()
		select {
		case l := <-live:
			return l
		case err := <-followed:
			t.Fatalf("follow ended: %v", err)
		case <-fctx.Done():
			t.Fatal("no line followed")
		}
		return api.PluginLogLine{}
	}
	if l := next(); l.ID != last.ID {
		t.Fatalf("the follow's first line %+v, want the last kept one %+v", l, last)
	}
	r, err := food.Search(ctx, "menu", &api.SearchRequest{Q: "followed"})
	if err != nil {
		t.Fatal(err)
	}
	if l := next(); l.Plugin != "logger" || l.RequestID != r.RequestID || l.Seq != 0 {
		t.Fatalf("followed line %+v, want one of request %s heard live", l, r.RequestID)
	}

	// Team books hears nothing of food's subject: the server refuses the
	// subscription.
	nc, err := nats.Connect(n.NATSURL(), nats.UserInfo("books", "books-secret"), nats.CustomInboxPrefix("_INBOX_books"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	heard := make(chan *nats.Msg, 16)
	if _, err := nc.ChanSubscribe(subject.PluginLogsPrefix+".food.>", heard); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if last := nc.LastError(); last == nil || !errors.Is(last, nats.ErrPermissionViolation) || !strings.Contains(last.Error(), "quarry.v1.logs.food.>") {
		t.Fatalf("books subscribing to food's logs: last error %v, want a permission violation", last)
	}
	unheard, err := food.Search(ctx, "menu", &api.SearchRequest{Q: "unheard"})
	if err != nil {
		t.Fatal(err)
	}
	// Once food's follow hears the search's line, the server has handed
	// it to every subscriber; books' flush returns after it would have
	// read it.
	for l := next(); l.RequestID != unheard.RequestID; l = next() {
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-heard:
		t.Fatalf("books heard food's line %s", m.Data)
	default:
	}
	stop()
	if err := <-followed; err != nil {
		t.Fatalf("follow: %v", err)
	}
	jctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	js, _ := jetstream.New(nc)
	if st, err := js.Stream(jctx, subject.PluginLogsStream); err == nil {
		if m, err := st.GetLastMsgForSubject(jctx, subject.PluginLogs("food", "logger")); err == nil {
			t.Fatalf("books read food's kept line %s", m.Data)
		}
	}
}
