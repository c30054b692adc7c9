// Package embednats runs a nats-server with JetStream inside the Quarry
// process: the embedded default of `quarry serve`, and the real server every
// test runs against.
package embednats
