package subject

import (
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// JetStream resources shared by every role.
const (
	// DocsStream is the stream of document updates, the source of truth for
	// every index's documents: one subject per document, one message kept per
	// subject, a delete stored as a tombstone.
	DocsStream = "QUARRY_DOCS"
	// DocsPrefix is the subject prefix of DocsStream.
	DocsPrefix = "quarry.v1.docs"
	// IndexesBucket is the KV bucket of index definitions.
	IndexesBucket = "quarry-indexes"
	// ManifestsBucket is the KV bucket of snapshot manifests, one key per index.
	ManifestsBucket = "quarry-manifests"
	// SegmentsBucket is the object store holding shard snapshots.
	SegmentsBucket = "quarry-segments"
	// PluginsBucket is the object store of plugin binaries, by digest.
	PluginsBucket = "quarry-plugins"
	// PipelinesBucket is the KV bucket of index pipelines (with history).
	PipelinesBucket = "quarry-pipelines"
	// PluginVersionsBucket records pushed plugin versions.
	PluginVersionsBucket = "quarry-plugin-versions"
	// EventsBucket records plugin events (automatic fallbacks), keyed
	// <index>.<plugin>.<unix nanoseconds>.
	EventsBucket = "quarry-plugin-events"
	// QueriesStream records a sample of live search requests, subject
	// quarry.v1.queries.<index>, for replays.
	QueriesStream = "QUARRY_QUERIES"
	// QueriesPrefix is QueriesStream's subject prefix.
	QueriesPrefix = "quarry.v1.queries"
	// ShadowBucket holds each broker's shadow-ranking tallies, keyed
	// <index>.<plugin>.<broker>.
	ShadowBucket = "quarry-shadow"
	// TeamsBucket holds each team's limits (api.TeamSettings), by team.
	TeamsBucket = "quarry-teams"
	// TokensBucket holds HTTP API tokens (api.Token), by the sha256 of
	// the token: never the token itself.
	TokensBucket = "quarry-tokens"
	// JudgementsBucket holds each index's judgement lists (keyed
	// <index>.set.<name>, with history: each push is a version) and its
	// relevance gate (<index>.gate).
	JudgementsBucket = "quarry-judgements"
	// InterleaveBucket holds what brokers recorded of interleaved searches
	// (api.InterleavedQuery), keyed <index>.<query_id>, for a day.
	InterleaveBucket = "quarry-interleave"
	// InterleaveTalliesBucket holds interleaving experiments' tallies
	// (api.CanaryStats), keyed <index>.<plugin>.<hex digest>.
	InterleaveTalliesBucket = "quarry-interleave-tallies"
	// FieldsBucket holds each index's distinct field paths (their
	// hashes), keyed by index, for its limit on them.
	FieldsBucket = "quarry-fields"
	// AliasesBucket holds index aliases (api.Alias), keyed by alias name.
	AliasesBucket = "quarry-aliases"
	// UserEventsStream holds what users did with search results (clicks,
	// add-to-cart, purchases, dwell), subject quarry.v1.events.<index>,
	// kept for UserEventsMaxAge; docs/relevance.md.
	UserEventsStream = "QUARRY_EVENTS"
	// UserEventsPrefix is UserEventsStream's subject prefix.
	UserEventsPrefix = "quarry.v1.events"
	// UploadsStream stages plugin binaries uploaded in chunks through the
	// admin API, one subject per upload, under the team of the index:
	// quarry.v1.uploads.<team>.<index>.<id>.
	UploadsStream = "QUARRY_UPLOADS"
	// UploadsPrefix is UploadsStream's subject prefix.
	UploadsPrefix = "quarry.v1.uploads"
	// PluginLogsStream keeps the recent lines of every team's plugins (in
	// memory, bounded per subject and by age): subject
	// quarry.v1.logs.<team>.<plugin>, where brokers publish them.
	PluginLogsStream = "QUARRY_PLUGIN_LOGS"
	// PluginLogsPrefix is PluginLogsStream's subject prefix; a team may
	// subscribe to PluginLogsPrefix.<team>.> (docs/teams.md).
	PluginLogsPrefix = "quarry.v1.logs"
	// RejectedStream keeps, per index, the records of the documents the
	// stream acknowledged that the indexer could not apply
	// (api.RejectedDocument): subject quarry.v1.rejected.<index>, the last
	// api.MaxRejectedDocuments of each.
	RejectedStream = "QUARRY_REJECTED"
	// RejectedPrefix is RejectedStream's subject prefix.
	RejectedPrefix = "quarry.v1.rejected"
)

// Request/reply services.
const (
	// ServiceName is the micro service name of the public search API.
	ServiceName = "quarry"
	// SearchPrefix is the subject prefix of the public search API.
	SearchPrefix = "quarry.v1.search"
	// ShardPrefix is the subject prefix of shard searches.
	ShardPrefix = "quarry.v1.shard"
	// IndexerPrefix is the subject prefix of the indexer's control API.
	IndexerPrefix = "quarry.v1.indexer"
	// AdminPrefix is the subject prefix of the admin API:
	// quarry.v1.admin.<index>.<operation>, so NATS permissions can give a
	// team its own indexes.
	AdminPrefix = "quarry.v1.admin"
	// ControlPrefix is the subject prefix of the control API, what only
	// the operator may do (quarry.v1.control.<operation>: create an
	// index): no team's permissions name it.
	ControlPrefix = "quarry.v1.control"
	// ControlQueue is the queue group of the control API's subscribers:
	// every broker's node and every indexer (package control).
	ControlQueue = "quarry-control"
	// AdminService is the admin API's micro service name.
	AdminService = "quarry-admin"
	// SearcherService and IndexerService are the micro services each
	// searcher and indexer process registers, for discovery: their
	// status endpoint (StatusPrefix) answers an api.RoleStatus.
	SearcherService = "quarry-searcher"
	IndexerService  = "quarry-indexer"
	// StatusPrefix is the subject prefix of those status endpoints:
	// StatusPrefix.<service>.<id>.
	StatusPrefix = "quarry.v1.status"
	// PipelineStatus is where every broker (no queue group) answers which
	// pipeline revision it runs for each index (api.PipelineStatus).
	PipelineStatus = "quarry.v1.brokers.pipelines"
	// BrokerQueries is where every broker (no queue group) answers a
	// request naming an index with its query log of it
	// (api.BrokerQueries).
	BrokerQueries = "quarry.v1.brokers.queries"
	// BrokerHeartbeat is where every broker says, every few seconds, that
	// it is up (its id as the body): brokers count each other to share a
	// team's rate limit (broker/peers.go).
	BrokerHeartbeat = "quarry.v1.brokers.heartbeat"
)

// Headers carried on Quarry messages.
const (
	// HeaderOp marks a document message as an upsert or a delete.
	HeaderOp = "Quarry-Op"
	// OpDelete is the HeaderOp value of a tombstone.
	OpDelete = "delete"
	// OpMapping is the HeaderOp value of a mapping marker: not a
	// document, but the index's new mapping (canonical JSON), which
	// every replica of the shard applies at this point of its stream
	// (MappingMarker).
	OpMapping = "mapping"
	// HeaderMappingRevision is a mapping marker's order: the revision of
	// the index definition that holds its mapping. A replica applies a
	// marker only above the last it applied, so markers of two changes
	// that reach a shard out of order leave every shard with the later.
	HeaderMappingRevision = "Quarry-Mapping-Revision"
	// HeaderReindexFrom marks a document message a reindex copied with
	// the stream sequence of the source's message (client.Reindex).
	HeaderReindexFrom = "Quarry-Reindex-From"
	// HeaderDeadline carries a request's deadline in Unix nanoseconds.
	HeaderDeadline = "Quarry-Deadline"
	// HeaderEncoding marks a zstd-compressed payload.
	HeaderEncoding = "Quarry-Encoding"
	// HeaderError carries an error message on a failed reply.
	HeaderError = "Quarry-Error"
	// HeaderUpload names a chunked upload (letters and digits, 1-64).
	HeaderUpload = "Quarry-Upload"
	// HeaderUploadOffset is a chunk's byte offset in its upload.
	HeaderUploadOffset = "Quarry-Upload-Offset"
	// HeaderUploadDrop, on a plugin.upload request with no body, drops
	// the staged upload HeaderUpload names.
	HeaderUploadDrop = "Quarry-Upload-Drop"
	// HeaderInternal marks a search Quarry makes for itself (its value
	// says why: validation, gate, eval): brokers answer it as any
	// other, but leave it out of the index's traffic (top and
	// zero-result queries) and of recorded queries.
	HeaderInternal = "Quarry-Internal"
	// HeaderIndexCreated, on a record of a rejected document, is when
	// the index the record belongs to was created (Unix milliseconds): a
	// record left of an index deleted and created again under its name
	// is not the new one's.
	HeaderIndexCreated = "Quarry-Index-Created"
)

// MaxIDBytes is the longest document id Quarry accepts.
const MaxIDBytes = 512

// ErrBadName reports an index name that is not usable in subjects and keys.
var ErrBadName = errors.New("invalid index name")

// ValidIndexName checks that name is 1–64 characters of [a-z0-9_-], starting
// with a letter or digit: safe as a subject token, KV key and directory name.
func ValidIndexName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w %q: must be 1-64 characters", ErrBadName, name)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (i > 0 && (c == '-' || c == '_'))
		if !ok {
			return fmt.Errorf("%w %q: use lowercase letters, digits, '-' and '_', starting with a letter or digit", ErrBadName, name)
		}
	}
	return nil
}

// ShardOf returns the shard of a document id: a stable FNV-1a hash of the id
// modulo the shard count. It never changes for a given id and count.
func ShardOf(id string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(shards))
}

// IDToken encodes a document id as a subject token (unpadded base64url).
func IDToken(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(id))
}

// IDFromToken decodes IDToken.
func IDFromToken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", fmt.Errorf("decode id token %q: %w", tok, err)
	}
	return string(b), nil
}

// Doc is the subject of one document of an index.
func Doc(index string, shard int, id string) string {
	return DocsPrefix + "." + index + "." + strconv.Itoa(shard) + "." + IDToken(id)
}

// MappingMarker is the subject of a mapping update's marker on one
// shard (OpMapping): a document subject whose id is update (the
// definition revision the marker carries, so that no later change
// replaces it in the stream, which keeps one message a subject) behind a
// byte that is not UTF-8, so no document's id can be it.
func MappingMarker(index string, shard int, update string) string {
	return Doc(index, shard, mappingMarkerPrefix+update)
}

// mappingMarkerPrefix starts every mapping marker's id.
const mappingMarkerPrefix = "\xffmapping:"

// DocsOfShard is the filter subject of every document of one shard.
func DocsOfShard(index string, shard int) string {
	return DocsPrefix + "." + index + "." + strconv.Itoa(shard) + ".>"
}

// DocsOfIndex is the filter subject of every document of an index.
func DocsOfIndex(index string) string {
	return DocsPrefix + "." + index + ".>"
}

// ParseDoc splits a document subject into index, shard and id.
func ParseDoc(subj string) (index string, shard int, id string, err error) {
	rest, ok := strings.CutPrefix(subj, DocsPrefix+".")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 {
		return "", 0, "", fmt.Errorf("not a document subject: %q", subj)
	}
	shard, err = strconv.Atoi(parts[1])
	if err != nil {
		return "", 0, "", fmt.Errorf("document subject %q: bad shard: %w", subj, err)
	}
	id, err = IDFromToken(parts[2])
	return parts[0], shard, id, err
}

// Shard is the request subject of one shard of an index.
func Shard(index string, shard int) string {
	return ShardPrefix + "." + index + "." + strconv.Itoa(shard)
}

// ParseShard splits a shard subject into index and shard.
func ParseShard(subj string) (index string, shard int, ok bool) {
	rest, ok := strings.CutPrefix(subj, ShardPrefix+".")
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return rest[:i], n, true
}

// ReplicaPrefix is the subject prefix of requests addressed to one
// searcher process rather than to a shard's queue group.
const ReplicaPrefix = "quarry.v1.replica"

// Replica is the subject one searcher process (replica id) answers for one
// shard; brokers use it to send a hedge to a different replica.
func Replica(replica, index string, shard int) string {
	return ReplicaPrefix + "." + replica + "." + index + "." + strconv.Itoa(shard)
}

// Replicas is the subject every searcher serving a shard answers with its
// replica id (no queue group): how brokers discover the replicas to route
// to.
func Replicas(index string, shard int) string {
	return "quarry.v1.replicas." + index + "." + strconv.Itoa(shard)
}

// ParseReplica splits a replica subject.
func ParseReplica(subj string) (replica, index string, shard int, ok bool) {
	rest, ok := strings.CutPrefix(subj, ReplicaPrefix+".")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", 0, false
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil || n < 0 {
		return "", "", 0, false
	}
	return parts[0], parts[1], n, true
}

// ShardQueue is the queue group replicas of one shard share.
func ShardQueue(index string, shard int) string {
	return "shard." + index + "." + strconv.Itoa(shard)
}

// Search is the public search subject of an index.
func Search(index string) string {
	return SearchPrefix + "." + index
}

// Snapshot is the indexer subject that asks for a snapshot of an index.
func Snapshot(index string) string {
	return IndexerPrefix + "." + index + ".snapshot"
}

// Control is the control API's subject of an operation.
func Control(op string) string { return ControlPrefix + "." + op }

// Admin is the admin subject of an operation on an index.
func Admin(index, op string) string { return AdminPrefix + "." + index + "." + op }

// PluginLogs is the subject of a team's plugin's log lines.
func PluginLogs(team, plugin string) string { return PluginLogsPrefix + "." + team + "." + plugin }

// Rejected is the subject of the records of an index's rejected
// documents, in RejectedStream.
func Rejected(index string) string { return RejectedPrefix + "." + index }

// Upload is the staging subject of one chunked upload to an index of a
// team.
func Upload(team, index, id string) string {
	return UploadsPrefix + "." + team + "." + index + "." + id
}

// UploadsOfTeam is the filter subject of every upload staged for one
// team's indexes.
func UploadsOfTeam(team string) string { return UploadsPrefix + "." + team + ".*.*" }

// ValidUploadID checks an upload id: 1-64 ASCII letters and digits.
func ValidUploadID(id string) error { return ValidID("upload id", id) }

// ValidID checks an id of the kind nuid makes (uploads, replicas, points
// in time): 1-64 ASCII letters and digits, so a subject token. what names
// it in the error.
func ValidID(what, id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("%s must be 1-64 letters and digits, got %d bytes", what, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("%s must be letters and digits, got %q", what, id)
		}
	}
	return nil
}

// SegmentObject names the object holding one shard's snapshot of a
// generation, with the first 16 hex digits of its digest ("sha256=<hex>"):
// an object's bytes never change under its name, so a manifest can never
// name an object another upload of the same generation overwrote.
// SegmentObjectPrefix is the name up to the digest.
func SegmentObject(index string, generation uint64, shard int, digest string) string {
	d := strings.TrimPrefix(digest, "sha256=")
	return SegmentObjectPrefix(index, generation, shard) + d[:min(16, len(d))]
}

// SegmentObjectPrefix is what every SegmentObject of a shard's snapshot of
// a generation starts with.
func SegmentObjectPrefix(index string, generation uint64, shard int) string {
	return fmt.Sprintf("%s/%d/%d-", index, generation, shard)
}

// Status is the status endpoint's subject of one searcher or indexer
// process.
func Status(service, id string) string { return StatusPrefix + "." + service + "." + id }
