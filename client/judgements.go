package client

import (
	"bytes"
	"context"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/relevance"
)

// PushJudgements stores a judgement list (NDJSON: one query a line with
// graded ratings, docs/relevance.md) as the next version of the index's
// list name, owned by the index's team. The list is checked here first
// and again by the admin service: a bad list is refused whole with an
// api.ErrBadRequest error naming each bad line, and nothing is stored.
func (c *Client) PushJudgements(ctx context.Context, index, name string, ndjson []byte) (*api.JudgementSet, error) {
	if _, err := relevance.Decode(bytes.NewReader(ndjson)); err != nil {
		return nil, err
	}
	var set api.JudgementSet
	err := c.admin(ctx, index, "judgements.push", map[string]any{"name": name, "ndjson": string(ndjson)}, &set)
	return &set, err
}

// JudgementSets lists an index's judgement lists (latest versions,
// without their queries).
func (c *Client) JudgementSets(ctx context.Context, index string) ([]api.JudgementSet, error) {
	var sets []api.JudgementSet
	err := c.admin(ctx, index, "judgements.ls", nil, &sets)
	return sets, err
}

// JudgementSet returns one version of a judgement list, with its
// queries (version 0: the latest).
func (c *Client) JudgementSet(ctx context.Context, index, name string, version int) (*api.JudgementSet, error) {
	var set api.JudgementSet
	err := c.admin(ctx, index, "judgements.show", map[string]any{"name": name, "version": version}, &set)
	return &set, err
}

// RemoveJudgements removes a judgement list and its earlier versions
// (refused while the index's gate uses it).
func (c *Client) RemoveJudgements(ctx context.Context, index, name string) error {
	var out map[string]string
	return c.admin(ctx, index, "judgements.rm", map[string]any{"name": name}, &out)
}

// SetGate sets an index's relevance gate: `plugin activate` and `plugin
// promote` then put a version live only if it passes (see api.Gate).
func (c *Client) SetGate(ctx context.Context, index string, g *api.Gate) (*api.Gate, error) {
	var out api.Gate
	err := c.admin(ctx, index, "judgements.gate", map[string]any{"gate": g}, &out)
	return &out, err
}

// Gate returns an index's relevance gate (api.ErrNotFound if none).
func (c *Client) Gate(ctx context.Context, index string) (*api.Gate, error) {
	var out api.Gate
	err := c.admin(ctx, index, "judgements.gate", nil, &out)
	return &out, err
}

// RemoveGate removes an index's relevance gate.
func (c *Client) RemoveGate(ctx context.Context, index string) error {
	var out api.Gate
	return c.admin(ctx, index, "judgements.gate", map[string]any{"clear": true}, &out)
}

// Evaluate runs a judgement list through the index's live pipeline and,
// with req.Variant, a pushed candidate version beside it, and returns the
// metrics per query and in sum (docs/relevance.md). Two evaluations of
// the same index give the same figures.
func (c *Client) Evaluate(ctx context.Context, index string, req api.EvalRequest) (*api.EvalReport, error) {
	var rep api.EvalReport
	err := c.admin(ctx, index, "judgements.eval", map[string]any{"eval": req}, &rep)
	return &rep, err
}

// GoLiveOption changes how ActivatePlugin and PromotePlugin put a
// version live.
type GoLiveOption func(map[string]any)

// Force puts a version live although the index's relevance gate refuses
// it; reason is required and recorded with a plugin event.
func Force(reason string) GoLiveOption {
	return func(m map[string]any) { m["force"], m["reason"] = true, reason }
}

// PutEvents stores what users did with an index's search results
// (clicks, add-to-cart, purchases, dwell; api.UserEvent, at most
// api.MaxEventsPerRequest a call) in the index's user events, kept 30
// days. A batch with a bad event is refused whole, naming it.
func (c *Client) PutEvents(ctx context.Context, index string, evs []api.UserEvent) (*api.EventsResult, error) {
	if err := api.ValidateEvents(evs); err != nil {
		return nil, err
	}
	var out api.EventsResult
	err := c.admin(ctx, index, "events.put", map[string]any{"events": evs}, &out)
	return &out, err
}

// JudgementsFromEvents builds a judgement list from an index's user
// events with a position-debiased click model (docs/relevance.md); push
// its queries with PushJudgements to keep it.
func (c *Client) JudgementsFromEvents(ctx context.Context, index string, req api.FromEventsRequest) (*api.FromEventsReport, error) {
	var out api.FromEventsReport
	err := c.admin(ctx, index, "judgements.from-events", map[string]any{"from_events": req}, &out)
	return &out, err
}
