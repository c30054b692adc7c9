package client

import (
	"context"

	"github.com/quarrysearch/quarry/api"
)

// CreateAlias makes the alias name point at index: every call of this
// package that takes an index (Search, Put, Get, Bulk, Patch,
// DeleteByQuery…) takes the alias too, and acts on the index it points
// at. It fails with an error matching api.ErrConflict if an alias or an
// index is named name, api.ErrNotFound if index does not exist, and
// api.ErrBadRequest if index is an alias itself.
func (c *Client) CreateAlias(ctx context.Context, name, index string) (api.Alias, error) {
	st, err := c.metaStore(ctx)
	if err != nil {
		return api.Alias{}, err
	}
	return st.CreateAlias(ctx, name, index)
}

// SwitchAlias points the alias name at index instead, atomically: a
// search or write through the alias gets the old index or the new one,
// never neither, and the new one once the brokers and clients have heard
// of the switch (their watch of the aliases: within moments; a client
// that cached the old index drops it then). client.Reindex copies the
// writes that still reach the old index meanwhile.
// The new index must be of the alias's team (api.ErrForbidden
// otherwise).
func (c *Client) SwitchAlias(ctx context.Context, name, index string) (api.Alias, error) {
	st, err := c.metaStore(ctx)
	if err != nil {
		return api.Alias{}, err
	}
	return st.SwitchAlias(ctx, name, index)
}

// DeleteAlias removes an alias; the index it pointed at stays.
func (c *Client) DeleteAlias(ctx context.Context, name string) error {
	st, err := c.metaStore(ctx)
	if err != nil {
		return err
	}
	return st.DeleteAlias(ctx, name)
}

// Alias returns an alias (api.ErrNotFound if there is none).
func (c *Client) Alias(ctx context.Context, name string) (api.Alias, error) {
	st, err := c.metaStore(ctx)
	if err != nil {
		return api.Alias{}, err
	}
	a, _, err := st.Alias(ctx, name)
	return a, err
}

// Aliases lists every alias, sorted by name.
func (c *Client) Aliases(ctx context.Context) ([]api.Alias, error) {
	st, err := c.metaStore(ctx)
	if err != nil {
		return nil, err
	}
	return st.ListAliases(ctx)
}
