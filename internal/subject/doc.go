// Package subject names every NATS subject, stream, bucket and queue group
// Quarry uses, and maps document ids to subject-safe tokens. Keeping the
// names in one place keeps the services and the client in agreement.
package subject
