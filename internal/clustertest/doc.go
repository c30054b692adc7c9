// Package clustertest holds no code: its test runs Quarry as an operator
// deploys it, from exactly the files in examples/deploy/: three
// nats-server processes (built at the version go.mod embeds) forming a
// JetStream cluster, `quarry init --replicas 3`, and every role as a
// process of its own started at once, then kills (-9) NATS members and
// roles under a steady load and checks that queries keep working and that
// no acknowledged write is lost. It sits above every other package (it
// runs the quarry binary), and nothing imports it.
package clustertest
