// Package snapshot packs a shard's index directory into one zstd-compressed
// tar stream with a sha256 digest, and unpacks such a stream safely: no
// path may escape the target directory, sizes are capped, and the digest is
// checked before the files are used.
package snapshot
