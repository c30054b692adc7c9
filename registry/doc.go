// Package registry is where teams' plugins live: binaries in the
// quarry-plugins object store, content-addressed by sha256; every pushed
// version and its validation in the quarry-plugin-versions bucket; each
// index's pipeline in the quarry-pipelines bucket, with history so any
// earlier pipeline can be restored. It serves the admin API
// (quarry.v1.admin.<index>.<operation>, micro service quarry-admin): a
// version is validated (compiled, ABI and imports checked, run on sample
// requests within its budget) before it can go live, and a refusal says
// which check failed. Brokers watch the pipelines bucket and swap new
// pipelines in (see broker.WatchPipelines).
package registry
