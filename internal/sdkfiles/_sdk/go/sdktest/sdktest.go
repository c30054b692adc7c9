// Package sdktest runs a plugin's hooks natively, in ordinary Go tests,
// through the same encoding the host uses: register the hooks (import the
// plugin's package, or call sdk.Rewriter/sdk.Ranker), then call Rewrite or
// Rank. To run the built .wasm itself against sample requests, use
// `quarry plugin run`.
package sdktest

import (
	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// SetConfig sets the configuration the plugin's sdk.Config returns.
func SetConfig(config []byte) { sdk.SetNativeConfig(config) }

// Rewrite runs the registered rewriter on req and returns its response.
func Rewrite(req *abi.RewriteRequest) (*abi.RewriteResponse, error) {
	out := sdk.HandleRewrite(abi.AppendRewriteRequest(nil, req), nil)
	var resp abi.RewriteResponse
	if err := abi.DecodeRewriteResponse(out, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Rank runs the registered ranker on req and returns its response.
func Rank(req *abi.RankRequest) (*abi.RankResponse, error) {
	out := sdk.HandleRank(abi.AppendRankRequest(nil, req), nil)
	var resp abi.RankResponse
	if err := abi.DecodeRankResponse(out, len(req.Candidates), &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}
