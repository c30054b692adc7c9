package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// teamsConf is the nats-server configuration docs/teams.md shows.
const teamsConf = "../examples/nats/teams.conf"

// teamClient connects as a team's NATS user, with the inbox prefix its
// permissions allow (empty: the default _INBOX).
func teamClient(t *testing.T, n *Node, user, inboxPrefix string) *client.Client {
	t.Helper()
	opts := []nats.Option{nats.UserInfo(user, user+"-secret"), nats.Name(user)}
	if inboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(inboxPrefix))
	}
	nc, err := nats.Connect(n.NATSURL(), opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	c, err := client.New(context.Background(), nc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// teamsNode starts a node behind teams.conf (docs/teams.md) with team
// food's index menu and team books' index books, 30 documents each,
// searchable, and returns it with the operator's client.
func teamsNode(t *testing.T) (*Node, *client.Client) {
	t.Helper()
	t.Setenv("QUARRY_NATS_PASSWORD", "quarry-secret")
	t.Setenv("FOOD_PASSWORD", "food-secret")
	t.Setenv("BOOKS_PASSWORD", "books-secret")
	n := startConfig(t, Config{NATSConfigFile: teamsConf, NATSOptions: []nats.Option{nats.UserInfo("quarry", "quarry-secret")},
		Indexer: &indexer.Config{}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	ops := n.Client()
	for _, def := range []api.IndexDefinition{{Name: "menu", Shards: 1, Team: "food"}, {Name: "books", Shards: 1, Team: "books"}} {
		if _, err := ops.CreateIndexDef(context.Background(), def); err != nil {
			t.Fatal(err)
		}
		mustBulk(t, ops, def.Name, ndjson(30, def.Name))
		waitTotal(t, ops, def.Name, "noodles", 10)
	}
	return n, ops
}

// TestTeamIsolation runs `quarry serve`'s roles behind the nats-server
// configuration of docs/teams.md and checks that team books cannot push
// to, activate on, or read team food's plugins, while each team manages
// and searches its own index with no JetStream access at all.
func TestTeamIsolation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, ops := teamsNode(t)

	food := teamClient(t, n, "food", "_INBOX_food")
	books := teamClient(t, n, "books", "_INBOX_books")
	suffix := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")

	// Each team manages its own index through the admin API alone.
	v, err := food.PushPlugin(ctx, "menu", "suffix", suffix, client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil {
		t.Fatalf("food pushes to its own index: %v", err)
	}
	if _, err := books.PushPlugin(ctx, "books", "suffix", suffix, client.PushOptions{Kind: "rewriter"}); err != nil {
		t.Fatalf("books pushes to its own index: %v", err)
	}
	logger := wasmtest.WATFile(t, "../examples/plugins/wat/logger.wat")
	lv, err := food.PushPlugin(ctx, "menu", "logger", logger, client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil {
		t.Fatalf("food pushes its logging plugin: %v", err)
	}
	waitRewriter(t, n.Broker, "menu", short(lv.Digest))
	if r, err := food.Search(ctx, "menu", &api.SearchRequest{Q: "spicy"}); err != nil || r.Total == 0 {
		t.Fatalf("food searches its own index: %v", err)
	}
	// Judgement lists too: a team's own, recorded as its.
	judgements := []byte(`{"q":"spicy","ratings":{"menu-1":3}}` + "\n")
	if set, err := food.PushJudgements(ctx, "menu", "golden", judgements); err != nil || set.Team != "food" {
		t.Fatalf("food pushes judgements to its own index: %+v %v", set, err)
	}
	if sets, err := food.JudgementSets(ctx, "menu"); err != nil || len(sets) != 1 {
		t.Fatalf("food lists its judgements: %+v %v", sets, err)
	}
	// And the records of its index's rejected documents (none here).
	if rej, err := food.RejectedDocuments(ctx, "menu", 0); err != nil || len(rej) != 0 {
		t.Fatalf("food lists its rejected documents: %+v %v", rej, err)
	}
	foodLogs(t, ctx, n, food, books)
	before, err := ops.Pipeline(ctx, "menu")
	if err != nil || len(before.Rewriters) != 2 {
		t.Fatalf("menu pipeline: %+v %v", before, err)
	}

	// Team books against team food's index: every operation refused by
	// NATS, quickly, with an error that says so.
	denied := []struct {
		name string
		op   func(context.Context) error
	}{
		{"push", func(ctx context.Context) error {
			_, err := books.PushPlugin(ctx, "menu", "evil", suffix, client.PushOptions{Kind: "rewriter", Activate: true})
			return err
		}},
		{"activate", func(ctx context.Context) error {
			_, err := books.ActivatePlugin(ctx, "menu", "suffix", v.Digest)
			return err
		}},
		{"remove", func(ctx context.Context) error { _, err := books.RemovePlugin(ctx, "menu", "suffix"); return err }},
		{"rollback", func(ctx context.Context) error { _, err := books.RollbackPipeline(ctx, "menu"); return err }},
		{"list plugins", func(ctx context.Context) error { _, err := books.Plugins(ctx, "menu"); return err }},
		{"show pipeline", func(ctx context.Context) error { _, err := books.Pipeline(ctx, "menu"); return err }},
		{"events", func(ctx context.Context) error { _, err := books.PluginEvents(ctx, "menu"); return err }},
		{"pipeline history", func(ctx context.Context) error { _, err := books.PipelineHistory(ctx, "menu"); return err }},
		{"index info", func(ctx context.Context) error { _, err := books.IndexInfo(ctx, "menu"); return err }},
		{"query report", func(ctx context.Context) error { _, err := books.QueryReport(ctx, "menu"); return err }},
		{"push judgements", func(ctx context.Context) error {
			_, err := books.PushJudgements(ctx, "menu", "golden", judgements)
			return err
		}},
		{"list judgements", func(ctx context.Context) error { _, err := books.JudgementSets(ctx, "menu"); return err }},
		{"show judgements", func(ctx context.Context) error { _, err := books.JudgementSet(ctx, "menu", "golden", 0); return err }},
		{"remove judgements", func(ctx context.Context) error { return books.RemoveJudgements(ctx, "menu", "golden") }},
		{"set the gate", func(ctx context.Context) error {
			_, err := books.SetGate(ctx, "menu", &api.Gate{Sets: []string{"golden"}, Metric: "ndcg"})
			return err
		}},
		{"evaluate", func(ctx context.Context) error {
			_, err := books.Evaluate(ctx, "menu", api.EvalRequest{Set: "golden"})
			return err
		}},
		{"send user events", func(ctx context.Context) error {
			_, err := books.PutEvents(ctx, "menu", []api.UserEvent{{ActionName: "click", QueryID: "q1", UserQuery: "spicy",
				EventAttributes: api.EventAttributes{Object: api.EventObject{ObjectID: "menu-1"}, Position: api.EventPosition{Ordinal: 1}}}})
			return err
		}},
		{"build judgements from events", func(ctx context.Context) error {
			_, err := books.JudgementsFromEvents(ctx, "menu", api.FromEventsRequest{})
			return err
		}},
		{"read canary stats", func(ctx context.Context) error { _, err := books.CanaryStats(ctx, "menu", "suffix"); return err }},
		{"list rejected documents", func(ctx context.Context) error { _, err := books.RejectedDocuments(ctx, "menu", 0); return err }},
		{"read plugin logs", func(ctx context.Context) error {
			_, err := books.PluginLogs(ctx, "menu", "logger", api.PluginLogsRequest{})
			return err
		}},
		{"follow plugin logs", func(ctx context.Context) error {
			return books.FollowPluginLogs(ctx, "menu", "logger", api.PluginLogsRequest{}, func(api.PluginLogLine) error { return nil })
		}},
	}
	for _, d := range denied {
		t.Run("books cannot "+d.name, func(t *testing.T) {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			start := time.Now()
			err := d.op(dctx)
			if !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), "quarry.v1.admin.menu.") {
				t.Fatalf("got %v, want a forbidden error naming the admin subject", err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("refusal took %s: it must not wait for a timeout", took)
			}
		})
	}

	// Nor create an index, not even one named like its own: the control
	// API is the operator's.
	t.Run("books cannot create an index", func(t *testing.T) {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := books.CreateIndexDef(dctx, api.IndexDefinition{Name: "books2", Shards: 1, Team: "books"})
		if !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), "quarry.v1.control.index.create") || !strings.Contains(err.Error(), "operator") {
			t.Fatalf("got %v, want a forbidden error naming the control subject", err)
		}
		if _, err := ops.Index(dctx, "books2"); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("the index exists after a refused create: %v", err)
		}
	})

	// Nor can it read the binaries or pipelines through JetStream.
	t.Run("books cannot read the plugin store", func(t *testing.T) {
		nc, err := nats.Connect(n.NATSURL(), nats.UserInfo("books", "books-secret"), nats.CustomInboxPrefix("_INBOX_books"))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		jctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if obs, err := js.ObjectStore(jctx, subject.PluginsBucket); err == nil {
			if _, err := obs.GetBytes(jctx, v.Digest); err == nil {
				t.Fatal("team books read team food's plugin binary")
			}
		}
		if kv, err := js.KeyValue(jctx, subject.PipelinesBucket); err == nil {
			if _, err := kv.Get(jctx, "menu"); err == nil {
				t.Fatal("team books read team food's pipeline")
			}
		}
	})

	// Replies go only to a team's own inbox prefix: a client on the
	// default _INBOX is told why it hears nothing.
	t.Run("default inbox refused", func(t *testing.T) {
		plain := teamClient(t, n, "books", "")
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := plain.Pipeline(dctx, "books")
		if !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), "inbox prefix") {
			t.Fatalf("got %v, want a forbidden error about the inbox prefix", err)
		}
	})

	after, err := ops.Pipeline(ctx, "menu")
	if err != nil || after.Revision != before.Revision {
		t.Fatalf("team books changed team food's pipeline: revision %d → %d (%v)", before.Revision, after.Revision, err)
	}
	if l, err := food.Plugins(ctx, "menu"); err != nil || len(l.Versions) != 2 {
		t.Fatalf("menu has versions %+v (%v), want food's two", l, err)
	}
}

// A team that may only search and administer its own index cannot have
// Quarry's services write for it: a request naming another subject than
// an inbox as its reply (another team's document subject, a JetStream API
// subject) is dropped, not answered there. Before, the broker's answer to
// team food's search, sent with the reply subject
// quarry.v1.docs.books.0.evil, was stored as a document of team books'
// index, with the broker's permissions.
func TestReplySubjectOutsideInbox(t *testing.T) {
	ctx := context.Background()
	n, _ := teamsNode(t)
	nc, err := nats.Connect(n.NATSURL(), nats.UserInfo("food", "food-secret"), nats.CustomInboxPrefix("_INBOX_food"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	for _, reply := range []string{subject.Doc("books", 0, "evil"), "$JS.API.STREAM.PURGE." + subject.DocsStream, "$KV.quarry-teams.books", "_INBOX.*", "_INBOX.>"} {
		for _, req := range []*nats.Msg{
			{Subject: subject.Search("menu"), Reply: reply, Data: []byte(`{"q":"noodles"}`)},
			{Subject: subject.AdminPrefix + ".menu.plugin.ls", Reply: reply, Data: []byte(`{}`)},
		} {
			if err := nc.PublishMsg(req); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The same requests with an inbox are answered, and after the others.
	food := teamClient(t, n, "food", "_INBOX_food")
	if r, err := food.Search(ctx, "menu", &api.SearchRequest{Q: "noodles"}); err != nil || r.Total != 10 {
		t.Fatalf("food's own search: %v", err)
	}
	if _, err := food.Plugins(ctx, "menu"); err != nil {
		t.Fatalf("food's own admin request: %v", err)
	}
	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, subject.DocsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject.DocsPrefix+".books.>"))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 60 || len(info.State.Subjects) != 30 {
		t.Fatalf("the documents stream holds %d messages, team books' index %d subjects: %v; want 60 and the 30 it wrote", info.State.Msgs, len(info.State.Subjects), info.State.Subjects)
	}
}

// TestChunkedUpload: a binary larger than one chunk arrives whole; bytes
// that do not hash to the announced digest (a truncated upload), an
// unknown upload, a bad chunk header and a digest never uploaded to the
// index are refused with a clear error and no version recorded.
func TestChunkedUpload(t *testing.T) {
	t.Parallel()
	n := startRoles(t, "", &indexer.Config{}, nil, &broker.Config{})
	c, ctx := n.Client(), context.Background()
	if _, err := c.CreateIndex(ctx, "up", 1, nil); err != nil {
		t.Fatal(err)
	}
	ltr := wasmtest.GoPlugin(t, "../examples/plugins/ltr")
	if len(ltr) < 3*512<<10 {
		t.Fatalf("the ltr plugin is %d bytes: too small to need several chunks", len(ltr))
	}
	v, err := c.PushPlugin(ctx, "up", "ltr", ltr, client.PushOptions{Kind: "ranker", Step: api.StepSpec{BudgetMS: 2000}})
	if err != nil || !v.Valid || v.Size != int64(len(ltr)) || v.Digest != meta.PluginDigest(ltr) {
		t.Fatalf("push %d bytes: %+v %v", len(ltr), v, err)
	}

	suffix := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")
	upload := func(id string, offset int, chunk []byte) error {
		msg := nats.NewMsg(subject.Admin("up", "plugin.upload"))
		msg.Header.Set(subject.HeaderUpload, id)
		msg.Header.Set(subject.HeaderUploadOffset, strconv.Itoa(offset))
		msg.Data = chunk
		reply, err := n.Conn().RequestMsg(msg, 10*time.Second)
		if err != nil {
			return err
		}
		if e := reply.Header.Get(micro.ErrorHeader); e != "" {
			return errors.New(e)
		}
		return nil
	}
	register := func(id, digest string) error {
		body, _ := json.Marshal(map[string]any{"name": "suffix", "kind": "rewriter", "digest": digest, "upload": id})
		reply, err := n.Conn().Request(subject.Admin("up", "plugin.register"), body, 30*time.Second)
		if err != nil {
			return err
		}
		if e := reply.Header.Get(micro.ErrorHeader); e != "" {
			return errors.New(e)
		}
		return nil
	}
	if err := upload("trunc1", 0, suffix[:len(suffix)/2]); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"truncated upload", register("trunc1", meta.PluginDigest(suffix)), "a truncated or corrupted upload"},
		{"unknown upload", register("nosuch", meta.PluginDigest(suffix)), "no upload nosuch"},
		{"bad upload id", upload("not/an.id", 0, suffix), "Quarry-Upload header"},
		{"bad offset", upload("x1", -5, suffix), "Quarry-Upload-Offset header"},
		{"over the size limit", upload("x2", meta.MaxPluginBytes, suffix), "size limit"},
		{"digest never uploaded here", register("", meta.PluginDigest(ltr)), "upload the binary"},
	}
	for _, tc := range cases {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, tc.err, tc.want)
		}
	}
	l, err := c.Plugins(ctx, "up")
	if err != nil || len(l.Versions) != 1 {
		t.Fatalf("versions after refused uploads: %+v %v (want ltr's alone)", l, err)
	}
	// A refused binary is not kept: its bytes are not in the object store.
	junk := bytes.Repeat([]byte("not wasm "), 1000)
	if _, err := c.PushPlugin(ctx, "up", "junk", junk, client.PushOptions{Kind: "rewriter"}); api.CodeOf(err) != api.CodeBadRequest {
		t.Fatalf("junk: %v", err)
	}
	if _, err := n.store.PluginBinary(ctx, meta.PluginDigest(junk)); err == nil {
		t.Error("the refused binary was kept in the object store")
	}
	if _, err := n.store.PluginBinary(ctx, meta.PluginDigest(ltr)); err != nil {
		t.Errorf("the valid binary was not kept: %v", err)
	}
	// The staging quota: 4 uploads at once per team (this index is a team
	// of its own); a chunk of one already staged is still taken.
	chunk := bytes.Repeat([]byte("w"), meta.MinUploadChunkBytes)
	for i := range meta.MaxStagedUploads {
		if err := upload(fmt.Sprint("q", i), 0, chunk); err != nil {
			t.Fatalf("upload %d of the quota: %v", i, err)
		}
	}
	if err := upload("qover", 0, suffix[:10]); err == nil || !strings.Contains(err.Error(), "4 plugin uploads staged, its quota") {
		t.Errorf("an upload over the quota: %v", err)
	}
	if err := upload("q0", len(chunk), suffix[10:20]); err != nil {
		t.Errorf("the next chunk of a staged upload: %v", err)
	}
}

// TestTeamRuntimeLimits: a team's plugins share one runtime with a cap on
// warm instances. A pipeline that would take a team over its cap is
// refused by the broker, which keeps serving the pipeline it had and
// records why; another team's plugins are not affected.
func TestTeamRuntimeLimits(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := startConfig(t, Config{TeamMaxInstances: 4,
		Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	c := n.Client()
	for _, def := range []api.IndexDefinition{{Name: "a1", Shards: 1, Team: "alpha"}, {Name: "a2", Shards: 1, Team: "alpha"}, {Name: "b1", Shards: 1, Team: "beta"}} {
		if _, err := c.CreateIndexDef(ctx, def); err != nil {
			t.Fatal(err)
		}
		mustBulk(t, c, def.Name, ndjson(9, def.Name))
	}
	suffix := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")
	push := func(index string, instances int) {
		t.Helper()
		if _, err := c.PushPlugin(ctx, index, "suffix", suffix, client.PushOptions{Kind: "rewriter", Activate: true, Step: api.StepSpec{Instances: instances}}); err != nil {
			t.Fatal(err)
		}
	}
	// rewritten checks whether the index's queries go through the suffix
	// rewriter: want true, once the broker runs the stored pipeline; want
	// false, as the broker runs it (a refused pipeline is recorded as an
	// event after the broker kept the one it had).
	rewritten := func(index string, want bool) {
		t.Helper()
		if want {
			waitLive(t, 10*time.Second, n.Broker, c, index)
		}
		r, err := c.Search(ctx, index, &api.SearchRequest{Q: "mild", Profile: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.ContainsFunc(r.Profile.Stages, func(s api.Stage) bool { return s.Name == "rewrite suffix" }); got != want {
			t.Fatalf("%s: rewritten %v, want %v (profile %+v)", index, got, want, r.Profile.Stages)
		}
	}
	push("a1", 3)
	rewritten("a1", true)
	push("a2", 2) // alpha would hold 5 of its 4 instances
	ev := waitEvent(t, c, "a2", "pipeline refused")
	if !strings.Contains(ev.Reason, "runtime limit") || !strings.Contains(ev.Reason, "3 of the 4 allowed") {
		t.Fatalf("event reason %q does not say which limit", ev.Reason)
	}
	rewritten("a2", false)
	push("b1", 4) // beta has its own 4
	rewritten("b1", true)
	rewritten("a1", true)
}

// TestReplyToAnotherTeamsInbox: team food cannot aim the answer to a
// request on its own index at team books' inbox: brokers and the admin
// API answer a request on an index of team T only at _INBOX.… or
// _INBOX_T.…, so books' inbox receives nothing.
func TestReplyToAnotherTeamsInbox(t *testing.T) {
	ctx := context.Background()
	n, _ := teamsNode(t)
	books, err := nats.Connect(n.NATSURL(), nats.UserInfo("books", "books-secret"), nats.CustomInboxPrefix("_INBOX_books"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(books.Close)
	got, err := books.SubscribeSync("_INBOX_books.victim")
	if err != nil {
		t.Fatal(err)
	}
	if err := books.Flush(); err != nil {
		t.Fatal(err)
	}
	food, err := nats.Connect(n.NATSURL(), nats.UserInfo("food", "food-secret"), nats.CustomInboxPrefix("_INBOX_food"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(food.Close)
	for _, req := range []*nats.Msg{
		{Subject: subject.Search("menu"), Reply: "_INBOX_books.victim", Data: []byte(`{"q":"noodles"}`)},
		{Subject: subject.AdminPrefix + ".menu.plugin.ls", Reply: "_INBOX_books.victim", Data: []byte(`{}`)},
	} {
		if err := food.PublishMsg(req); err != nil {
			t.Fatal(err)
		}
	}
	if err := food.Flush(); err != nil {
		t.Fatal(err)
	}
	// Food's own requests, sent after those, are answered: the others
	// were handled (and dropped) first.
	fc := teamClient(t, n, "food", "_INBOX_food")
	if _, err := fc.Search(ctx, "menu", &api.SearchRequest{Q: "noodles"}); err != nil {
		t.Fatalf("food's own search: %v", err)
	}
	if _, err := fc.Plugins(ctx, "menu"); err != nil {
		t.Fatalf("food's own admin request: %v", err)
	}
	if m, err := got.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("team books' inbox received an answer to team food's request: %s", m.Data)
	}
}
