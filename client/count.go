package client

import (
	"context"

	"github.com/quarrysearch/quarry/api"
)

// liveDocs returns the documents an index holds now: each shard's count
// from one of its searchers, summed, as the admin service counts them
// (documents.count; the shards are asked in Quarry's own protocol, not by
// the client). It fails if any shard does not answer.
func (c *Client) liveDocs(ctx context.Context, def api.IndexDefinition) (uint64, error) {
	var out api.DocumentCount
	if err := c.admin(ctx, def.Name, "documents.count", nil, &out); err != nil {
		return 0, err
	}
	return out.Docs, nil
}
