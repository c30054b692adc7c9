package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/backoff"
	"github.com/quarrysearch/quarry/internal/gather"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/subject"
)

// PushOptions are a plugin version's settings.
type PushOptions struct {
	// Kind is "rewriter" or "ranker".
	Kind string
	// Step holds the config, budget, policy, fields and rerank depth the
	// version runs with once activated.
	Step api.StepSpec
	// Activate puts the version live once it is validated.
	Activate bool
	// Samples are requests the version must handle within its budget
	// before it can go live, besides the index's own (at most
	// api.MaxValidationSamples).
	Samples []api.SearchRequest
}

// PushPlugin uploads a plugin binary through the admin API (in chunks, so
// a binary of any allowed size fits NATS's payload limit), has the admin
// service check its digest, store it content-addressed and validate it, and
// with opts.Activate puts it live. It needs no JetStream access: NATS
// permissions on quarry.v1.admin.<index>.> are enough. A refused version
// returns an api.ErrBadRequest error naming the check that failed, and the
// live pipeline is untouched.
func (c *Client) PushPlugin(ctx context.Context, index, name string, wasm []byte, opts PushOptions) (*api.PluginVersion, error) {
	if len(wasm) == 0 {
		return nil, api.BadRequest("plugin binary is empty")
	}
	if len(wasm) > meta.MaxPluginBytes {
		return nil, api.BadRequest("plugin binary is %d bytes, over the limit of %d", len(wasm), meta.MaxPluginBytes)
	}
	digest := meta.PluginDigest(wasm)
	upload := nuid.Next()
	chunk := meta.MaxUploadChunkBytes
	if max := int(c.nc.MaxPayload()) - 4096; max > 0 && max < chunk {
		chunk = max
	}
	for off := 0; off < len(wasm); off += chunk {
		msg := nats.NewMsg(subject.Admin(index, "plugin.upload"))
		msg.Header.Set(subject.HeaderUpload, upload)
		msg.Header.Set(subject.HeaderUploadOffset, strconv.Itoa(off))
		msg.Data = wasm[off:min(off+chunk, len(wasm))]
		var r struct {
			Received int64 `json:"received"`
		}
		if err := c.adminMsg(ctx, index, msg, &r); err != nil {
			c.dropUpload(ctx, index, upload)
			return nil, fmt.Errorf("upload %s at byte %d of %d: %w", name, off, len(wasm), err)
		}
	}
	var v api.PluginVersion
	if err := c.admin(ctx, index, "plugin.register", map[string]any{"name": name, "kind": opts.Kind, "digest": digest, "upload": upload, "step": opts.Step, "samples": opts.Samples}, &v); err != nil {
		// The registry drops the upload of a register it received; this
		// covers one it never got (the push cancelled, a timeout).
		c.dropUpload(ctx, index, upload)
		return nil, err
	}
	if opts.Activate {
		if _, err := c.ActivatePlugin(ctx, index, name, digest); err != nil {
			return &v, err
		}
	}
	return &v, nil
}

// dropUpload asks the registry to drop what a push that failed staged, at
// once, even when ctx is done (the push cancelled): staged uploads count
// against the team's quota (meta.MaxStagedUploads) until dropped or idle
// for meta.UploadIdle. A failure is ignored: the upload then expires.
func (c *Client) dropUpload(ctx context.Context, index, upload string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropUploadTimeout)
	defer cancel()
	msg := nats.NewMsg(subject.Admin(index, "plugin.upload"))
	msg.Header.Set(subject.HeaderUpload, upload)
	msg.Header.Set(subject.HeaderUploadDrop, "1")
	var r struct{}
	_ = c.adminMsg(ctx, index, msg, &r)
}

// dropUploadTimeout bounds dropUpload.
const dropUploadTimeout = 5 * time.Second

// ActivatePlugin puts a validated version of a plugin live on an index.
// When the index has a relevance gate, the version must pass it: else an
// api.ErrGateFailed error whose Gate has the figures (see Force). A gate
// still running when the registry stops waiting for it (its --gate-wait,
// 20 s) goes on in the background: the error is then api.ErrGateRunning,
// whose Running WaitGate waits for, and the version goes live by itself
// if it passes.
func (c *Client) ActivatePlugin(ctx context.Context, index, name, digest string, opts ...GoLiveOption) (*api.PipelineSpec, error) {
	var spec api.PipelineSpec
	body := map[string]any{"name": name, "digest": digest}
	for _, o := range opts {
		o(body)
	}
	err := c.admin(ctx, index, "plugin.activate", body, &spec)
	return &spec, err
}

// CanaryPlugin sends percent of an index's queries to a candidate version
// of a live plugin, sticky by the context field stickyKey (e.g. "user";
// empty: random). Percent 0 ends the canary.
func (c *Client) CanaryPlugin(ctx context.Context, index, name, digest string, percent int, stickyKey string) (*api.PipelineSpec, error) {
	var spec api.PipelineSpec
	err := c.admin(ctx, index, "plugin.canary", map[string]any{"name": name, "digest": digest, "percent": percent, "sticky_key": stickyKey}, &spec)
	return &spec, err
}

// InterleavePlugin starts an interleaving experiment on a live ranker:
// percent of the queries (sticky by the context field stickyKey) get a
// team-draft interleaving of the live and the candidate version's
// rankings; clicks sent with PutEvents credit the side that placed what
// was clicked, and when test (zero fields: the defaults) decides, the
// candidate is promoted or rolled back by itself. Percent 0 ends it.
func (c *Client) InterleavePlugin(ctx context.Context, index, name, digest string, percent int, stickyKey string, test api.InterleaveSpec) (*api.PipelineSpec, error) {
	var spec api.PipelineSpec
	err := c.admin(ctx, index, "plugin.canary", map[string]any{"name": name, "digest": digest, "percent": percent, "sticky_key": stickyKey, "interleave": test}, &spec)
	return &spec, err
}

// CanaryStats returns a plugin's interleaving experiment's tally: the
// running one, or the latest.
func (c *Client) CanaryStats(ctx context.Context, index, name string) (*api.CanaryStats, error) {
	var st api.CanaryStats
	err := c.admin(ctx, index, "canary.stats", map[string]any{"name": name}, &st)
	return &st, err
}

// PromotePlugin makes a plugin's canary its live version; like
// ActivatePlugin, it must pass the index's relevance gate if it has one
// (api.ErrGateFailed; api.ErrGateRunning while it runs on: WaitGate).
func (c *Client) PromotePlugin(ctx context.Context, index, name string, opts ...GoLiveOption) (*api.PipelineSpec, error) {
	var spec api.PipelineSpec
	body := map[string]any{"name": name}
	for _, o := range opts {
		o(body)
	}
	err := c.admin(ctx, index, "plugin.promote", body, &spec)
	return &spec, err
}

// ShadowPlugin runs a candidate version of a live ranker on percent of
// the queries, only to compare it (0 ends the shadow).
func (c *Client) ShadowPlugin(ctx context.Context, index, name, digest string, percent int) (*api.PipelineSpec, error) {
	var spec api.PipelineSpec
	err := c.admin(ctx, index, "plugin.shadow", map[string]any{"name": name, "digest": digest, "percent": percent}, &spec)
	return &spec, err
}

// ShadowStats compares a ranker's shadow with its live version, over every
// broker.
func (c *Client) ShadowStats(ctx context.Context, index, name string) (*api.ShadowStats, error) {
	var st api.ShadowStats
	err := c.admin(ctx, index, "shadow.stats", map[string]any{"name": name}, &st)
	return &st, err
}

// PluginEvents lists what the platform did to an index's plugins on its
// own (automatic fallbacks), oldest first.
func (c *Client) PluginEvents(ctx context.Context, index string) ([]api.PluginEvent, error) {
	var evs []api.PluginEvent
	err := c.admin(ctx, index, "plugin.events", nil, &evs)
	return evs, err
}

// RemovePlugin takes a plugin out of an index's pipeline.
func (c *Client) RemovePlugin(ctx context.Context, index, name string) (*api.PipelineSpec, error) {
	var spec api.PipelineSpec
	err := c.admin(ctx, index, "plugin.rm", map[string]any{"name": name}, &spec)
	return &spec, err
}

// RollbackPipeline restores an index's previous pipeline.
func (c *Client) RollbackPipeline(ctx context.Context, index string) (*api.PipelineSpec, error) {
	var spec api.PipelineSpec
	err := c.admin(ctx, index, "plugin.rollback", nil, &spec)
	return &spec, err
}

// Pipeline returns an index's live pipeline.
func (c *Client) Pipeline(ctx context.Context, index string) (*api.PipelineSpec, error) {
	var spec api.PipelineSpec
	err := c.admin(ctx, index, "pipeline.show", nil, &spec)
	return &spec, err
}

// SetPipeline replaces an index's whole pipeline. Every step must name a
// validated version pushed to the index, and the pipeline must pass the
// index's relevance gate if it has one (see Force; api.ErrGateRunning
// while the gate runs on, as for ActivatePlugin: WaitGate).
func (c *Client) SetPipeline(ctx context.Context, index string, spec *api.PipelineSpec, opts ...GoLiveOption) (*api.PipelineSpec, error) {
	var out api.PipelineSpec
	body := map[string]any{"spec": spec}
	for _, o := range opts {
		o(body)
	}
	err := c.admin(ctx, index, "pipeline.set", body, &out)
	return &out, err
}

// BrokerPipelines asks every broker which pipeline revision it runs for
// each index. Brokers answer at once; it gathers the answers that come
// within wait (default 300ms). A NATS user that may not ask (see
// docs/teams.md) gets none.
func (c *Client) BrokerPipelines(ctx context.Context, wait time.Duration) ([]api.PipelineStatus, error) {
	if wait <= 0 {
		wait = 300 * time.Millisecond
	}
	var out []api.PipelineStatus
	err := gather.Replies(ctx, c.nc, subject.PipelineStatus, nil, wait, func(m *nats.Msg) {
		var st api.PipelineStatus
		if json.Unmarshal(m.Data, &st) == nil && st.Broker != "" {
			out = append(out, st)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b api.PipelineStatus) int { return strings.Compare(a.Broker, b.Broker) })
	return out, nil
}

// PluginList is an index's pushed versions and its live pipeline.
type PluginList struct {
	Versions []api.PluginVersion `json:"versions"`
	Pipeline *api.PipelineSpec   `json:"pipeline"`
	// Gate, while the index's relevance gate runs on a change in the
	// background (the admin service that answered runs it), is how far
	// it got.
	Gate *api.GateProgress `json:"gate,omitempty"`
}

// Plugins lists an index's pushed plugin versions and its pipeline.
func (c *Client) Plugins(ctx context.Context, index string) (*PluginList, error) {
	var l PluginList
	err := c.admin(ctx, index, "plugin.ls", nil, &l)
	return &l, err
}

// admin sends one admin request and decodes the answer or the error.
func (c *Client) admin(ctx context.Context, index, op string, body any, out any) error {
	if err := subject.ValidIndexName(index); err != nil {
		return api.BadRequest("%v", err)
	}
	msg := nats.NewMsg(subject.Admin(index, op))
	msg.Data, _ = json.Marshal(body)
	return c.adminMsg(ctx, index, msg, out)
}

// adminMsg sends one admin message and decodes the answer or the error.
func (c *Client) adminMsg(ctx context.Context, index string, msg *nats.Msg, out any) error {
	if err := subject.ValidIndexName(index); err != nil {
		return api.BadRequest("%v", err)
	}
	op := strings.TrimPrefix(msg.Subject, subject.AdminPrefix+"."+index+".")
	return c.call(ctx, fmt.Sprintf("admin %s on index %q", op, index), msg, out)
}

// call sends one message to the admin service (what names it in an
// error) and decodes the answer into out, or returns the error it
// answered. Without a deadline in ctx it waits 2 minutes.
func (c *Client) call(ctx context.Context, what string, msg *nats.Msg, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	reply, err := c.request(ctx, msg)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if reply.Header.Get(micro.ErrorHeader) != "" {
		var e api.Error
		if json.Unmarshal(reply.Data, &e) == nil && e.Code != "" {
			return &e
		}
		code, _ := strconv.Atoi(reply.Header.Get(micro.ErrorCodeHeader))
		return api.Errorf(codeFromStatus(code), "%s", reply.Header.Get(micro.ErrorHeader))
	}
	return json.Unmarshal(reply.Data, out)
}

// noResponder is the error of a request no service took: an
// api.CodeUnavailable error (its Unwrap), which a caller that may wait
// for the service to start tells apart with errors.As.
type noResponder struct{ err *api.Error }

func (e noResponder) Error() string { return e.err.Error() }
func (e noResponder) Unwrap() error { return e.err }

// request sends msg and waits for its reply like nats.Conn.RequestMsg, but
// fails fast when the server refuses the request for the user's
// permissions. A server drops a denied publish (or a reply to an inbox the
// user may not subscribe to) and reports it asynchronously, so a plain
// request would only time out.
func (c *Client) request(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	msg.Reply = inbox
	if err := c.nc.PublishMsg(msg); err != nil {
		return nil, err
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		switch {
		case errors.Is(err, nats.ErrNoResponders) || (err == nil && len(m.Data) == 0 && m.Header.Get("Status") == "503"):
			return nil, noResponder{api.Errorf(api.CodeUnavailable, "no admin service is running (it runs beside the broker)")}
		case err == nil:
			return m, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded):
			return nil, err
		}
		if last := c.nc.LastError(); last != nil && errors.Is(last, nats.ErrPermissionViolation) {
			switch text := last.Error(); {
			case strings.Contains(text, `"`+msg.Subject+`"`) && strings.HasPrefix(msg.Subject, subject.ControlPrefix+"."):
				return nil, api.Errorf(api.CodeForbidden, "this NATS user may not publish to %s (the control API is the operator's: connect as the operator's user)", msg.Subject)
			case strings.Contains(text, `"`+msg.Subject+`"`):
				return nil, api.Errorf(api.CodeForbidden, "this NATS user may not publish to %s (the index belongs to another team?)", msg.Subject)
			case strings.Contains(text, "Subscription") && strings.Contains(text, `"`+inbox+`"`):
				return nil, api.Errorf(api.CodeForbidden, "this NATS user may not receive replies on %s: connect with the inbox prefix its permissions allow", inbox)
			}
		}
	}
}

// RecordedQueries returns up to limit search requests brokers recorded for
// an index (see broker.Config.RecordPercent), oldest first, as JSON.
func (c *Client) RecordedQueries(ctx context.Context, index string, limit int) ([]json.RawMessage, error) {
	if err := subject.ValidIndexName(index); err != nil {
		return nil, api.BadRequest("%v", err)
	}
	st, err := c.metaStore(ctx)
	if err != nil {
		return nil, err
	}
	return st.RecordedQueries(ctx, index, limit)
}

// PipelineHistory lists the index's pipeline revisions the registry keeps
// (64), oldest first.
func (c *Client) PipelineHistory(ctx context.Context, index string) ([]*api.PipelineSpec, error) {
	var hist []*api.PipelineSpec
	err := c.admin(ctx, index, "pipeline.history", nil, &hist)
	return hist, err
}

// IndexInfo returns what a team may read of its own index through the
// admin API: its definition, snapshot generation, and each shard's
// snapshot figures and serving replicas.
func (c *Client) IndexInfo(ctx context.Context, index string) (*api.IndexInfo, error) {
	var info api.IndexInfo
	err := c.admin(ctx, index, "index.show", nil, &info)
	return &info, err
}

// QueryReport sums every broker's query log of an index through the admin
// API: the most searched texts, those that found nothing and the slowest
// searches with their stages.
func (c *Client) QueryReport(ctx context.Context, index string) (*api.QueryReport, error) {
	var rep api.QueryReport
	err := c.admin(ctx, index, "queries.report", nil, &rep)
	return &rep, err
}

// WaitPipeline waits until every broker that answers runs the index's
// pipeline revision rev or a later one (what ActivatePlugin, SetPipeline
// and the other pipeline changes return in PipelineSpec.Revision): a
// search sent after it returns runs the new pipeline. Brokers swap a new
// pipeline in within moments of the change; the CLI's pipeline commands
// wait this way (--wait). It returns the brokers' last answers; none when
// no broker answered (none runs, or the NATS user may not ask). The error
// on ctx's end names the brokers still behind.
func (c *Client) WaitPipeline(ctx context.Context, index string, rev uint64) ([]api.PipelineStatus, error) {
	pause := backoff.New(5*time.Millisecond, 100*time.Millisecond)
	for {
		status, err := c.BrokerPipelines(ctx, 100*time.Millisecond)
		if err != nil {
			return nil, err
		}
		behind := ""
		for _, st := range status {
			if r := st.Revisions[index]; r < rev {
				behind += fmt.Sprintf(" broker %s at revision %d;", st.Broker, r)
			}
		}
		if behind == "" {
			return status, nil
		}
		if pause.Wait(ctx) != nil {
			return status, api.Errorf(api.CodeTimeout, "pipeline revision %d of index %q was not live on every broker in time:%s", rev, index, strings.TrimSuffix(behind, ";"))
		}
	}
}

// gateOutcomeGrace is how long after a gate's deadline WaitGate still
// looks for its outcome: the registry records it within seconds.
const gateOutcomeGrace = 30 * time.Second

// WaitGate waits until the relevance gate job behind a gate_running
// error ends (job is the error's Running) and returns its outcome as the
// change's request would have: the index's pipeline once the change is
// live, else the error (api.ErrGateFailed with the figures in Gate, a
// timeout when the gate ran out of its time, a conflict when the
// pipeline changed under a promotion, …). It polls plugin.ls, calling
// progress (if not nil) with how far the gate got at each poll that
// finds it, and reads the outcome from the plugin event the registry
// records when the job ends (api.EventGateLive and the others). The end
// of ctx stops only the waiting: the gate goes on.
func (c *Client) WaitGate(ctx context.Context, index string, job *api.GateProgress, progress func(api.GateProgress)) (*api.PipelineSpec, error) {
	if job == nil || job.Plugin == "" {
		return nil, api.BadRequest("WaitGate needs the gate job a gate_running error names (its Running)")
	}
	version := "set"
	if job.Digest != "" {
		version = api.ShortDigest(job.Digest)
	}
	pause := backoff.New(50*time.Millisecond, 500*time.Millisecond)
	for {
		l, err := c.Plugins(ctx, index)
		switch {
		case errors.Is(err, api.ErrOverloaded): // the team's admin lane is full: look again
			l = &PluginList{}
		case err != nil:
			return nil, err
		}
		if g := l.Gate; g != nil && g.Plugin == job.Plugin && g.Digest == job.Digest && g.Started.Equal(job.Started) {
			if progress != nil {
				progress(*g)
			}
		} else {
			// Not running, or running on another admin service than the
			// one that answered: done once its outcome is recorded.
			evs, err := c.PluginEvents(ctx, index)
			if err != nil && !errors.Is(err, api.ErrOverloaded) {
				return nil, err
			}
			for i := len(evs) - 1; i >= 0; i-- {
				ev := evs[i]
				if ev.Broker != "registry" || ev.Plugin != job.Plugin || ev.Version != version || ev.Time.Before(job.Started) {
					continue
				}
				switch ev.Event {
				case api.EventGateLive, api.EventGateForced:
					return c.Pipeline(ctx, index)
				case api.EventGateRefused, api.EventGateStopped:
					e := &api.Error{Code: ev.Code, Message: ev.Reason}
					if e.Code == api.CodeGateFailed {
						e.Gate = ev.Gate
					}
					return nil, e
				}
			}
			if !job.Deadline.IsZero() && time.Now().After(job.Deadline.Add(gateOutcomeGrace)) {
				return nil, api.Errorf(api.CodeUnavailable, "the relevance gate of %q on %s (%s) ended without recording its outcome: the admin service that ran it stopped? See quarry plugin events %s", index, job.Plugin, job.What, index)
			}
		}
		if err := pause.Wait(ctx); err != nil {
			return nil, err
		}
	}
}
