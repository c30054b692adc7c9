package indexmap

// bleve registers its timestamp date parsers (unix_sec, unix_milli,
// unix_micro, unix_nano: a datetime field's date_format, a mapping's
// default_datetime_parser) only from its root package, which links the
// index engines (scorch, upsidedown). A process that builds mappings and
// links no engine, the broker (internal/archtest's
// TestBrokerLinksNoIndex), registers them here, so that it builds every
// mapping a shard builds.
import (
	_ "github.com/blevesearch/bleve/v2/analysis/datetime/timestamp/microseconds"
	_ "github.com/blevesearch/bleve/v2/analysis/datetime/timestamp/milliseconds"
	_ "github.com/blevesearch/bleve/v2/analysis/datetime/timestamp/nanoseconds"
	_ "github.com/blevesearch/bleve/v2/analysis/datetime/timestamp/seconds"
)
