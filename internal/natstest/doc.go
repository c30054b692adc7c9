// Package natstest starts the real, in-process nats-server with JetStream
// that Quarry's tests run against. It is the one test-server helper every
// package reuses.
package natstest
